package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"strata/blockdev"
	"strata/hybrid"
	"strata/hybrid/memory"
)

// TestCacheCollector: every statistic passes the Prometheus linter,
// registers without clashes, and follows the cache; a memory-only cache
// leaves the disk metrics out.
func TestCacheCollector(t *testing.T) {
	for _, tc := range []struct {
		name    string
		devices int
	}{
		{"memory only", 0},
		{"with disk", 1},
		{"two devices", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := hybrid.Options{Memory: memory.Options{Capacity: 8 << 20}}
			for range tc.devices {
				dev, err := blockdev.NewMem(128<<20, 4096)
				if err != nil {
					t.Fatal(err)
				}
				opts.Devices = append(opts.Devices, dev)
			}
			c, err := hybrid.Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			cc := newCacheCollector(c)
			problems, err := testutil.CollectAndLint(cc)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
			reg := prometheus.NewRegistry()
			if err := reg.Register(cc); err != nil {
				t.Fatal(err)
			}
			c.Insert([]byte("k"), []byte("v"), time.Time{})
			c.Get([]byte("k"), nil)
			want := "\n# HELP strata_cache_memory_hits_total Memory tier lookups that found a live entry.\n# TYPE strata_cache_memory_hits_total counter\nstrata_cache_memory_hits_total 1\n"
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "strata_cache_memory_hits_total"); err != nil {
				t.Error(err)
			}
			n, err := testutil.GatherAndCount(reg, "strata_disk_inserts_total")
			if err != nil || (n == 1) != (tc.devices > 0) {
				t.Errorf("strata_disk_inserts_total: %d series (err %v), want devices=%d", n, err, tc.devices)
			}
			if n, err := testutil.GatherAndCount(reg, "strata_disk_device_online"); err != nil || n != tc.devices {
				t.Errorf("strata_disk_device_online: %d series (err %v), want %d", n, err, tc.devices)
			}
			if tc.devices == 1 {
				online := "\n# HELP strata_disk_device_online 1 while the device (its index in the config's list, from 0) is in service, 0 while it is out of service after repeated failures.\n# TYPE strata_disk_device_online gauge\nstrata_disk_device_online{device=\"0\"} 1\n"
				if err := testutil.GatherAndCompare(reg, strings.NewReader(online), "strata_disk_device_online"); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

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
		name string
		disk bool
	}{
		{"memory only", false},
		{"with disk", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := hybrid.Options{Memory: memory.Options{Capacity: 8 << 20}}
			if tc.disk {
				dev, err := blockdev.NewMem(128<<20, 4096)
				if err != nil {
					t.Fatal(err)
				}
				opts.Device = dev
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
			if err != nil || (n == 1) != tc.disk {
				t.Errorf("strata_disk_inserts_total: %d series (err %v), want disk=%v", n, err, tc.disk)
			}
			if tc.disk {
				online := "\n# HELP strata_disk_online 1 while the disk tier is in service, 0 while it is out of service after repeated failures.\n# TYPE strata_disk_online gauge\nstrata_disk_online 1\n"
				if err := testutil.GatherAndCompare(reg, strings.NewReader(online), "strata_disk_online"); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

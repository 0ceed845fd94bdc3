package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"strata/hybrid"
	"strata/hybrid/memory"
)

func memoryCache(t *testing.T) *hybrid.Cache {
	t.Helper()
	c, err := hybrid.Open(hybrid.Options{Memory: memory.Options{Capacity: 8 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func TestStatsCollector(t *testing.T) {
	c := memoryCache(t)
	c.Insert([]byte("k"), []byte("v"), time.Time{})
	c.Get([]byte("k"), nil)
	c.Get([]byte("k"), nil)
	c.Get([]byte("absent"), nil)
	col := newStatsCollector(c.Stats)
	problems, err := testutil.CollectAndLint(col)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	if n := testutil.CollectAndCount(col); n != len(col.metrics) {
		t.Fatalf("%d series, want %d", n, len(col.metrics))
	}
	want := `
# HELP hybrid_memory_hits_total Memory tier lookups that found a live entry.
# TYPE hybrid_memory_hits_total counter
hybrid_memory_hits_total 2
# HELP hybrid_memory_entries Live memory tier entries.
# TYPE hybrid_memory_entries gauge
hybrid_memory_entries 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "hybrid_memory_hits_total", "hybrid_memory_entries"); err != nil {
		t.Fatal(err)
	}
}

func TestStartMetrics(t *testing.T) {
	c := memoryCache(t)
	off, err := startMetrics(&config{}, c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	off() // --metrics not given: a no-op
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:80", "nonsense"} {
		if _, err := startMetrics(&config{Metrics: true, MetricsAddr: addr}, c, io.Discard); err == nil {
			t.Errorf("%q accepted: not loopback", addr)
		}
	}
	var out strings.Builder
	stop, err := startMetrics(&config{Metrics: true, MetricsAddr: "127.0.0.1:0"}, c, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	url := regexp.MustCompile(`http://\S+/metrics`).FindString(out.String())
	if url == "" {
		t.Fatalf("no URL in %q", out.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "hybrid_memory_hits_total 0") {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

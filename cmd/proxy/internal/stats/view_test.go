package stats

import (
	"math"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, s string) Snapshot {
	t.Helper()
	x, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

const before = `strata_requests_total{cache_status="hit"} 100
strata_requests_total{cache_status="miss"} 50
strata_response_bytes_total 0
strata_cache_memory_hits_total 100
strata_disk_hits_total 0
strata_cache_misses_total 50
strata_origin_request_duration_seconds_bucket{le="0.001"} 0
strata_origin_request_duration_seconds_bucket{le="0.004"} 0
strata_origin_request_duration_seconds_bucket{le="+Inf"} 0
strata_origin_request_duration_seconds_count 0
strata_disk_online 1
strata_disk_written_bytes_total 0
strata_disk_dropped_total{reason="admission"} 0
strata_disk_dropped_total{reason="queue"} 5
`

const after = `strata_requests_total{cache_status="hit"} 280
strata_requests_total{cache_status="miss"} 70
strata_response_bytes_total 409600
strata_cache_memory_hits_total 250
strata_disk_hits_total 30
strata_cache_misses_total 70
strata_origin_request_duration_seconds_bucket{le="0.001"} 10
strata_origin_request_duration_seconds_bucket{le="0.004"} 20
strata_origin_request_duration_seconds_bucket{le="+Inf"} 20
strata_origin_request_duration_seconds_count 20
strata_inflight_fills 3
strata_cache_memory_used_bytes 1048576
strata_cache_memory_capacity_bytes 4194304
strata_disk_online 0
strata_disk_written_bytes_total 2097152
strata_disk_write_budget_bytes_per_second 4194304
strata_disk_dropped_total{reason="admission"} 20
strata_disk_dropped_total{reason="queue"} 5
strata_access_log_dropped_lines_total 8
`

// TestRender: rates are differences over the interval, ratios are of
// those rates, and each subject has its line.
func TestRender(t *testing.T) {
	var b strings.Builder
	Render(&b, "node", time.Unix(0, 0), mustParse(t, before), mustParse(t, after), 2*time.Second)
	out := b.String()
	for _, want := range []string{
		"requests     100/s  hit 90/s  stale 0/s  miss 10/s",
		"sent 200.0 KiB/s",
		"hit ratio    requests 90.0%  lookups: memory 75.0%  disk 15.0%  neither 10.0%",
		"origin       10/s  latency p50 1ms  p99 3.94ms",
		"fills        3 in flight",
		"memory       tier 1.0 MiB of 4.0 MiB (25.0%)",
		"disk         online NO",
		"disk writes  1.0 MiB/s of budget 4.0 MiB/s (25.0%)",
		"disk drops   admission 10/s  queue 0/s",
		"cut short 0/s  access log dropped 4/s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestRenderMemoryOnly(t *testing.T) {
	var b strings.Builder
	s := mustParse(t, "strata_requests_total{cache_status=\"hit\"} 1\n")
	Render(&b, "node", time.Unix(0, 0), s, s, time.Second)
	if !strings.Contains(b.String(), "disk         none (memory only)") || strings.Contains(b.String(), "access log") {
		t.Errorf("memory-only node:\n%s", b.String())
	}
}

// TestRateAfterRestart: a counter that went down counts from zero.
func TestRateAfterRestart(t *testing.T) {
	v := view{prev: mustParse(t, "c 100\n"), cur: mustParse(t, "c 30\n"), secs: 10}
	if got := v.rate("c"); got != 3 {
		t.Errorf("rate after a restart %v, want 3", got)
	}
}

func TestQuantile(t *testing.T) {
	empty := view{prev: mustParse(t, before), cur: mustParse(t, before), secs: 1}
	if q := empty.quantile("strata_origin_request_duration_seconds", 0.5); !math.IsNaN(q) {
		t.Errorf("no observations: %v, want NaN", q)
	}
	v := view{prev: mustParse(t, before), cur: mustParse(t, after), secs: 1}
	for _, tc := range []struct{ q, want float64 }{{0.25, 0.0005}, {0.5, 0.001}, {0.75, 0.0025}, {1, 0.004}} {
		if got := v.quantile("strata_origin_request_duration_seconds", tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("q%v = %v, want %v", tc.q, got, tc.want)
		}
	}
}

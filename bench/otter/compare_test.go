package main

import (
	"sync"
	"testing"

	"strata/hybrid/memory"
)

// The same comparisons as `go run .`, as Go benchmarks for benchstat:
//
//	go test -run '^$' -bench . -count 5

var (
	workloadOnce sync.Once
	workload     *getWorkload
)

func sharedWorkload() *getWorkload {
	workloadOnce.Do(func() { workload = newGetWorkload(100_000) })
	return workload
}

func BenchmarkGetParallel(b *testing.B) {
	w := sharedWorkload()
	b.Run("strata", w.strataGet)
	b.Run("otter", w.otterGet)
}

// BenchmarkHitRatio reports hit ratios as metrics (one replay per run).
func BenchmarkHitRatio(b *testing.B) {
	const keys = 100_000
	for _, wl := range []struct {
		name string
		scan int
	}{{"zipf", 0}, {"zipf+scan", keys / 10}} {
		t := trace(keys, 500_000, 0.9, wl.scan)
		for _, c := range []struct {
			name string
			new  func() cache
		}{
			{"strata", func() cache { return newStrata(keys/10, memory.S3FIFO) }},
			{"otter", func() cache { return newOtter(keys / 10) }},
		} {
			b.Run(wl.name+"/"+c.name, func(b *testing.B) {
				var r float64
				for b.Loop() {
					r = hitRatio(c.new(), t)
				}
				b.ReportMetric(r, "hit-ratio")
			})
		}
	}
}

// TestTrace checks the scan mix: fresh ids appear once each, in runs.
func TestTrace(t *testing.T) {
	tr := trace(1000, 20_000, 0.9, 100)
	seen := map[int]int{}
	for _, id := range tr {
		seen[id]++
	}
	fresh := 0
	for id, n := range seen {
		if id >= 1000 {
			fresh++
			if n != 1 {
				t.Fatalf("scan id %d requested %d times", id, n)
			}
		}
	}
	if len(tr) != 20_000 || fresh < 3000 || fresh > 4000 {
		t.Fatalf("len %d, %d fresh ids; want 20000 and about 1/6 fresh", len(tr), fresh)
	}
}

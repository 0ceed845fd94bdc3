package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"text/tabwriter"

	"strata/hybrid/memory"
)

func main() {
	keys := flag.Int("keys", 100_000, "distinct keys in the Zipf traces")
	requests := flag.Int("requests", 1_000_000, "requests per hit-ratio trace")
	testing.Init()
	flag.Parse()
	fmt.Printf("strata memory.Cache vs otter v2.4.0: %d-byte values, 16-byte keys, equal entry capacity "+
		"(strata charges %d B/entry); GOMAXPROCS=%d\n\n", valueSize, entryCharge(), runtime.GOMAXPROCS(0))
	ok := hitRatioTable(*keys, *requests)
	ok = throughputTable(*keys) && ok
	if !ok {
		fmt.Println("\nTARGET MISSED")
		os.Exit(1)
	}
}

// hitRatioTable prints hit ratios and reports whether S3-FIFO ≥ otter on
// every row.
func hitRatioTable(keys, requests int) bool {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tcapacity\tstrata s3fifo\tstrata lru\tstrata fifo\totter\ts3fifo/otter\t")
	ok := true
	for _, wl := range []struct {
		name string
		scan int
	}{{"zipf 0.9", 0}, {"zipf 0.9 + scans", keys / 10}} {
		t := trace(keys, requests, 0.9, wl.scan)
		for _, pct := range []int{1, 10} {
			n := keys * pct / 100
			var r [4]float64
			for i, c := range []cache{newStrata(n, memory.S3FIFO), newStrata(n, memory.LRU),
				newStrata(n, memory.FIFO), newOtter(n)} {
				r[i] = hitRatio(c, t)
			}
			ok = ok && r[0] >= r[3]
			fmt.Fprintf(tw, "%s\t%d%% (%d)\t%.4f\t%.4f\t%.4f\t%.4f\t%s\t\n", wl.name, pct, n, r[0], r[1], r[2], r[3], ratio(r[0], r[3]))
		}
	}
	tw.Flush()
	return ok
}

// throughputTable prints parallel Get figures and reports whether strata
// reached 0.8× otter's throughput.
func throughputTable(keys int) bool {
	w := newGetWorkload(keys)
	// Alternate the two and keep each one's fastest of five runs: the
	// machine is shared, and a burst of load should not pick the winner.
	var s, o testing.BenchmarkResult
	for range 5 {
		s = faster(s, testing.Benchmark(w.strataGet))
		o = faster(o, testing.Benchmark(w.otterGet))
	}
	fmt.Printf("\nparallel Get, %d keys held, Zipf 0.9 reads (best of 5 alternating runs):\n", keys)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cache\tns/op\tMops/s\tallocs/op\t")
	for _, r := range []struct {
		name string
		res  testing.BenchmarkResult
	}{{"strata s3fifo", s}, {"otter", o}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%d\t\n", r.name, nsPerOp(r.res), 1e3/nsPerOp(r.res), r.res.AllocsPerOp())
	}
	tw.Flush()
	x := nsPerOp(o) / nsPerOp(s)
	fmt.Printf("strata/otter throughput: %.2f (target ≥ 0.80)\n", x)
	return x >= 0.8
}

func nsPerOp(r testing.BenchmarkResult) float64 {
	return float64(r.T.Nanoseconds()) / float64(r.N)
}

func faster(a, b testing.BenchmarkResult) testing.BenchmarkResult {
	if a.N == 0 || nsPerOp(b) < nsPerOp(a) {
		return b
	}
	return a
}

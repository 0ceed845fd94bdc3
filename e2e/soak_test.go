package e2e

// TestSoak is `make soak`: the mixed load of TestMemoryBound for a long
// time (STRATA_SOAK, e.g. 30m; skipped when unset, so not part of
// `make test`) against strata on a FUSE disk that keeps failing: in each
// period the device is healthy, then hangs, then answers EIO. Every
// response must be whole and correct (misses are served by the origin
// while the disk is out of service), resident memory must stay under the
// budget strata logs, and RSS and goroutines must be flat at the end: the
// last quarter's peaks no higher than the second quarter's (plus a little
// slack), and the goroutines back to their idle count once the load stops.

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"
)

// soakSample is one look at the process.
type soakSample struct {
	at         time.Duration
	rss        int64
	goroutines float64
}

func TestSoak(t *testing.T) {
	v := os.Getenv("STRATA_SOAK")
	if v == "" {
		t.Skip("STRATA_SOAK unset: the soak runs from `make soak` (STRATA_SOAK=30m)")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute {
		t.Fatalf("STRATA_SOAK=%q: want a duration of at least 1m", v)
	}
	disk, path := mountFuseDisk(t, 256<<20)
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Config: fmt.Sprintf(`origins: [{url: %s}]
cache:
  disk:
    read_timeout: 200ms
    error_limit: 5
    error_window: 10s
    probe_interval: 500ms
limits:
  memory: 256MiB
  max_conns: 512
`, o.URL("origin")), Mem: "64MiB", Args: []string{"-cache-path", path, "-cache-size", "256MiB"}})
	t.Cleanup(func() { disk.set(diskOK) })
	bound := loggedBudget(t, s.Output())
	idle := metric(t, s.Admin, "go_goroutines")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var samples []soakSample
	wg.Go(func() { soakFaults(disk, min(time.Minute, d/6), stop) })
	wg.Go(func() { samples = soakSampler(t, s, stop) })
	l := runMixedLoad(t, s.URL, 16, d)
	close(stop)
	wg.Wait()
	disk.set(diskOK)
	after := awaitGoroutines(t, s, idle+10, 30*time.Second) // connections and fills wind down

	peak := int64(0)
	for _, x := range samples {
		peak = max(peak, x.rss)
	}
	t.Logf("%v: %d requests, %d MiB, %d memory hits, %d disk hits, %d errors; out of service %v times; RSS peak %d MiB (budget %d MiB); goroutines idle %v before, %v after",
		d, l.requests.Load(), l.bytes.Load()>>20, l.memory.Load(), l.disk.Load(), l.errors.Load(),
		metric(t, s.Admin, "strata_disk_out_of_service_total"), peak>>20, bound>>20, idle, after)
	for _, x := range samples {
		t.Logf("  %6v rss %4d MiB goroutines %v", x.at.Round(time.Second), x.rss>>20, x.goroutines)
	}
	if n := l.errors.Load(); n > 0 {
		t.Errorf("%d responses failed or came back short", n)
	}
	if bound > 0 && peak > bound {
		t.Errorf("RSS peak %d MiB over the budget %d MiB", peak>>20, bound>>20)
	}
	if after > idle+10 {
		t.Errorf("goroutines %v once idle again, %v before the load: a leak", after, idle)
	}
	wantFlat(t, samples)
}

// awaitGoroutines polls go_goroutines until it is at most want or d
// passed, and returns the last count.
func awaitGoroutines(t *testing.T, s *strata, want float64, d time.Duration) float64 {
	deadline := time.Now().Add(d)
	for {
		g := metric(t, s.Admin, "go_goroutines")
		if g <= want || time.Now().After(deadline) {
			return g
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// soakFaults cycles the device through healthy (2/3 of period), hung and
// failing (1/6 each) until stop.
func soakFaults(disk *fuseDisk, period time.Duration, stop <-chan struct{}) {
	steps := []struct {
		mode int32
		part time.Duration
	}{{diskOK, period * 4 / 6}, {diskHang, period / 6}, {diskFail, period / 6}}
	for {
		for _, st := range steps {
			disk.set(st.mode)
			select {
			case <-stop:
				return
			case <-time.After(st.part):
			}
		}
	}
}

// soakSampler samples RSS and goroutines every 5 s until stop.
func soakSampler(t *testing.T, s *strata, stop <-chan struct{}) []soakSample {
	start := time.Now()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	var out []soakSample
	for {
		select {
		case <-stop:
			return out
		case <-tick.C:
		}
		rss, _, err := s.RSS()
		g, ok := metricSample(t, s.Admin, "go_goroutines")
		if err == nil && ok {
			out = append(out, soakSample{at: time.Since(start), rss: rss, goroutines: g})
		}
	}
}

// wantFlat fails when the last quarter's RSS or goroutine peak passes the
// second quarter's by more than the slack.
func wantFlat(t *testing.T, samples []soakSample) {
	t.Helper()
	n := len(samples)
	if n < 8 {
		t.Errorf("only %d samples: too short to judge", n)
		return
	}
	q2, q4 := samples[n/4:n/2], samples[3*n/4:]
	peakRSS := func(xs []soakSample) int64 {
		p := int64(0)
		for _, x := range xs {
			p = max(p, x.rss)
		}
		return p
	}
	median := func(xs []soakSample) float64 {
		g := make([]float64, len(xs))
		for i, x := range xs {
			g[i] = x.goroutines
		}
		sort.Float64s(g)
		return g[len(g)/2]
	}
	if a, b := peakRSS(q2), peakRSS(q4); b > a+a/10+16<<20 {
		t.Errorf("RSS still growing: second quarter's peak %d MiB, last quarter's %d MiB", a>>20, b>>20)
	}
	if a, b := median(q2), median(q4); b > a*1.2+20 {
		t.Errorf("goroutines still growing: second quarter's median %v, last quarter's %v", a, b)
	}
}

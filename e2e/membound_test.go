package e2e

// TestMemoryBound runs a mixed load (misses, memory hits, disk hits,
// large sliced objects) against strata with a 64 MiB memory tier and
// samples its resident memory from /proc: the peak must stay under the
// budget strata logs at start (limits.memory derived from the config, see
// configs.Budget). STRATA_MEM_LOAD=60s runs it longer (the figure quoted in
// the README); STRATA_MEM_PROFILE=FILE saves a heap profile at the end.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// mixedLoad is what runMixedLoad did.
type mixedLoad struct {
	requests, bytes, errors atomic.Int64
	memory, disk            atomic.Int64 // hits by tier (Cache-Status detail)
}

// loadPick returns the next request's path and size: 30% a hot set that
// fits memory, 30% a warm set four times the memory tier (disk hits),
// 25% objects never asked before (misses), 15% large objects of 2–12 MiB
// (sliced; a third of them new).
func loadPick(rng *rand.Rand, w int, seq *atomic.Int64) (string, int64) {
	switch p := rng.IntN(100); {
	case p < 30:
		i := rng.IntN(400)
		size := int64(4<<10 + i*97)
		return fmt.Sprintf("/obj/%d/hot-%d?max-age=3600", size, i), size
	case p < 60:
		i := rng.IntN(2000)
		size := int64(32<<10 + (i%29)*8<<10)
		return fmt.Sprintf("/obj/%d/warm-%d?max-age=3600", size, i), size
	case p < 85:
		size := int64(1<<10 + rng.IntN(256<<10))
		return fmt.Sprintf("/obj/%d/miss-%d-%d?max-age=3600", size, w, seq.Add(1)), size
	}
	size := int64(2<<20 + rng.IntN(10<<20))
	name := fmt.Sprintf("large-%d", rng.IntN(40))
	if rng.IntN(3) == 0 {
		name = fmt.Sprintf("large-new-%d-%d", w, seq.Add(1))
	}
	return fmt.Sprintf("/obj/%d/%s?max-age=3600", size, name), size
}

// runMixedLoad drives workers clients against base for d.
func runMixedLoad(t *testing.T, base string, workers int, d time.Duration) *mixedLoad {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: 60 * time.Second}
	defer client.CloseIdleConnections()
	var l mixedLoad
	var seq atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for time.Now().Before(deadline) {
				path, size := loadPick(rng, w, &seq)
				l.fetch(client, base+path, size)
			}
		}()
	}
	wg.Wait()
	return &l
}

func (l *mixedLoad) fetch(c *http.Client, url string, size int64) {
	l.requests.Add(1)
	resp, err := c.Get(url)
	if err != nil {
		l.errors.Add(1)
		return
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	l.bytes.Add(n)
	switch cs := cacheStatus(resp.Header); {
	case strings.Contains(cs, "detail=memory"):
		l.memory.Add(1)
	case strings.Contains(cs, "detail=disk"):
		l.disk.Add(1)
	}
	if err != nil || resp.StatusCode != 200 || n != size {
		l.errors.Add(1)
	}
}

// sampleRSS reads p's VmRSS every 100 ms until stop closes and returns the
// largest VmHWM seen.
func sampleRSS(p *process, stop <-chan struct{}) (peak int64) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, hwm, err := p.RSS(); err == nil {
			peak = max(peak, hwm)
		}
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}

func TestMemoryBound(t *testing.T) {
	d := 25 * time.Second
	if s := os.Getenv("STRATA_MEM_LOAD"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin"), Mem: "64MiB", Config: "limits: {memory: 240MiB, max_conns: 512}\n",
		Args: []string{"-cache-size", "512MiB", "-pprof"}})
	bound := loggedBudget(t, s.Output())
	stop := make(chan struct{})
	peak := make(chan int64)
	go func() { peak <- sampleRSS(s.process, stop) }()
	start := time.Now()
	l := runMixedLoad(t, s.URL, 16, d)
	close(stop)
	p := <-peak
	took := time.Since(start)
	cur, _, _ := s.RSS()
	t.Logf("budget %.1f MiB; %v: %d requests (%.0f/s; %d memory hits, %d disk hits), %d MiB, %d errors; strata RSS peak %d MiB, at end %d MiB",
		float64(bound)/(1<<20), took.Round(time.Second), l.requests.Load(), float64(l.requests.Load())/took.Seconds(), l.memory.Load(), l.disk.Load(),
		l.bytes.Load()>>20, l.errors.Load(), p>>20, cur>>20)
	t.Logf("metrics: %s", metricLine(t, s.Admin))
	if path := os.Getenv("STRATA_MEM_PROFILE"); path != "" {
		saveHeapProfile(t, s.Admin, path)
	}
	if l.errors.Load() > 0 {
		t.Errorf("%d requests failed or came back short", l.errors.Load())
	}
	if bound > 0 && p > bound {
		t.Errorf("peak RSS %.1f MiB over the budget %.1f MiB", float64(p)/(1<<20), float64(bound)/(1<<20))
	}
}

var budgetRE = regexp.MustCompile(`memory budget budget="total=([0-9.]+)MiB`)

// loggedBudget is the budget total from strata's "memory budget" line.
func loggedBudget(t *testing.T, out string) int64 {
	m := budgetRE.FindStringSubmatch(out)
	if m == nil {
		t.Errorf("no memory budget line in:\n%s", out)
		return 0
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(f * (1 << 20))
}

// saveHeapProfile writes strata's heap profile to path (for go tool pprof).
func saveHeapProfile(t *testing.T, admin, path string) {
	_, body := get(t, admin+"/debug/pprof/heap")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// metricLine is a few cache metrics, for the log.
func metricLine(t *testing.T, admin string) string {
	out := ""
	for _, m := range []string{"strata_cache_memory_hits_total", "strata_disk_hits_total", "strata_cache_misses_total",
		"strata_disk_dropped_total", "go_memstats_heap_inuse_bytes", "go_memstats_sys_bytes",
		"go_gc_duration_seconds_count", "go_gc_duration_seconds_sum", "process_cpu_seconds_total"} {
		if v, ok := metricSample(t, admin, m); ok {
			out += fmt.Sprintf("%s=%g ", m, v)
		}
	}
	return out
}

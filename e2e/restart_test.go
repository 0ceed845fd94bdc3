package e2e

// Restarts keep the cache: on SIGTERM strata writes its memory tier down
// to the disk tier and checkpoints the disk index; the next start loads
// the checkpoint instead of scanning and reads the hot set back into
// memory in the background.

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// restartConfig lets a disk read wait long: on a starved machine a read
// past the default 250 ms is a miss, and these tests count hits to prove
// what a restart keeps, not how fast the disk answers.
const restartConfig = "cache:\n  disk:\n    read_timeout: 10s\n"

// restart stops s with SIGTERM and starts strata again on the same cache
// file and client address (the Host header is part of the cache key),
// with the same options.
func restart(t *testing.T, s *strata, o strataOpts) *strata {
	t.Helper()
	t0 := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v; output:\n%s", err, s.Output())
	}
	t.Logf("stop took %v: %s", time.Since(t0), logLine(s, "drain requests"))
	awaitLog(t, s, "memory tier written down", 1) // the output may trail the exit
	o.Args = append(o.Args, "-listen", strings.TrimPrefix(s.URL, "http://"))
	return startStrata(t, o)
}

// TestRestartFetchOnce: an object fetched once lives only in the memory
// tier (write_policy eviction); after SIGTERM and a restart it is a hit
// and the origin was asked once.
func TestRestartFetchOnce(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	opts := strataOpts{Origin: o.URL("origin"), Dir: t.TempDir(), Config: restartConfig}
	s := startStrata(t, opts)
	const path = "/obj/64k/once?max-age=600"
	want := objectBytes("/obj/64k/once", 0, "", 0, 64<<10)
	if resp, body := get(t, s.URL+path); resp.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("first fetch: %s, right=%v", resp.Status, bytes.Equal(body, want))
	}
	s = restart(t, s, opts)
	defer s.Stop()
	if resp, _ := get(t, s.Admin+"/readyz"); resp.StatusCode != 200 {
		t.Errorf("/readyz after the start: %s", resp.Status)
	}
	if !strings.Contains(s.Output(), "index checkpoint loaded") {
		t.Errorf("the start after a clean stop scanned; output:\n%s", s.Output())
	}
	resp, body := get(t, s.URL+path)
	if resp.StatusCode != 200 || !bytes.Equal(body, want) || !strings.Contains(cacheStatus(resp.Header), "hit") {
		t.Fatalf("after restart: %s, Cache-Status %q, right=%v", resp.Status, cacheStatus(resp.Header), bytes.Equal(body, want))
	}
	if n := originCount(t, o, path); n != 1 {
		t.Fatalf("origin asked %d times, want 1", n)
	}
}

// TestRestart200: 200 objects of 16 KiB, all in memory, are all hits
// after a restart.
func TestRestart200(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	opts := strataOpts{Origin: o.URL("origin"), Dir: t.TempDir(), Config: restartConfig}
	s := startStrata(t, opts)
	url := func(i int) string { return fmt.Sprintf("/obj/16k/two?max-age=600&n=%d", i) }
	fetchAll(t, s.URL, 200, url)
	s = restart(t, s, opts)
	defer s.Stop()
	r := fetchAll(t, s.URL, 200, url)
	if r.hits() != 200 {
		t.Fatalf("after restart: %s, want 200 hits", r)
	}
	want := objectBytes("/obj/16k/two", 0, "", 0, 16<<10)
	if _, body := get(t, s.URL+url(7)); !bytes.Equal(body, want) {
		t.Fatal("wrong bytes after restart")
	}
}

// TestRestartAfterKill: a start after a SIGKILL never trusts the
// checkpoint of the stop before it (the start that loaded it cleared it):
// it scans, and serves what the disk holds.
func TestRestartAfterKill(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	opts := strataOpts{Origin: o.URL("origin"), Dir: t.TempDir(), Config: restartConfig}
	s := startStrata(t, opts)
	url := func(i int) string { return fmt.Sprintf("/obj/16k/kill?max-age=600&n=%d", i) }
	fetchAll(t, s.URL, 200, url)
	s = restart(t, s, opts)
	if !strings.Contains(s.Output(), "index checkpoint loaded") {
		t.Fatalf("the start after a clean stop scanned; output:\n%s", s.Output())
	}
	s.kill()
	opts.Args = append(opts.Args, "-listen", strings.TrimPrefix(s.URL, "http://"))
	s = startStrata(t, opts)
	defer s.Stop()
	out := s.Output()
	if strings.Contains(out, "index checkpoint loaded") || !strings.Contains(out, "disk: recovered") {
		t.Fatalf("the start after SIGKILL used a checkpoint; output:\n%s", out)
	}
	t.Log(logLine(s, "cache opened"))
	if r := fetchAll(t, s.URL, 200, url); r.hits() != 200 {
		t.Fatalf("after SIGKILL: %s, want 200 hits", r)
	}
}

// TestRestart10k: 10,000 objects in memory → restart → at least 99% hits.
func TestRestart10k(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	opts := strataOpts{Origin: o.URL("origin"), Dir: t.TempDir(), Mem: "64MiB", Config: restartConfig}
	s := startStrata(t, opts)
	url := func(i int) string { return fmt.Sprintf("/obj/2k/ten?max-age=600&n=%d", i) }
	t0 := time.Now()
	fetchAll(t, s.URL, 10000, url)
	t1 := time.Now()
	s = restart(t, s, opts)
	defer s.Stop()
	t2 := time.Now()
	awaitLog(t, s, "hot set read back into memory", 1)
	r := fetchAll(t, s.URL, 10000, url)
	t.Logf("after restart: %s; fill %v, restart %v, warm-up and hits %v", r, t1.Sub(t0), t2.Sub(t1), time.Since(t2))
	if r.hits() < 9900 {
		t.Fatalf("after restart: %s, want ≥ 9900 hits", r)
	}
}

// tally counts responses by where they came from.
type tally struct{ memory, disk, miss, other atomic.Int64 }

func (r *tally) hits() int64 { return r.memory.Load() + r.disk.Load() }

func (r *tally) String() string {
	return fmt.Sprintf("%d memory hits, %d disk hits, %d misses, %d other",
		r.memory.Load(), r.disk.Load(), r.miss.Load(), r.other.Load())
}

// fetchAll GETs url(0..n-1) from base with 4 clients and counts where
// each response came from; any status but 200 fails the test.
func fetchAll(t *testing.T, base string, n int, url func(int) string) *tally {
	t.Helper()
	var r tally
	var next atomic.Int64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections() // so that a stop need not wait for them
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fetchOne(hc, base+url(i), &r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return &r
}

func fetchOne(hc *http.Client, url string, r *tally) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := bytes.NewBuffer(nil).ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("GET %s: body: %w", url, err)
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	switch cs := cacheStatus(resp.Header); {
	case strings.Contains(cs, "detail=memory"):
		r.memory.Add(1)
	case strings.Contains(cs, "detail=disk"):
		r.disk.Add(1)
	case isMiss(resp.Header):
		r.miss.Add(1)
	default:
		r.other.Add(1)
	}
	return nil
}

// TestRestartStopTime (STRATA_RESTART_BENCH=1): fills a 256 MiB memory
// tier with 64 KiB objects, measures SIGTERM to exit (write-down,
// checkpoint, sync) and the next start's hits.
func TestRestartStopTime(t *testing.T) {
	if os.Getenv("STRATA_RESTART_BENCH") == "" {
		t.Skip("set STRATA_RESTART_BENCH=1 to measure stop time with a full 256 MiB memory tier")
	}
	o := startOrigin(t)
	opts := strataOpts{Origin: o.URL("origin"), Dir: t.TempDir(), Mem: "256MiB", Args: []string{"-cache-size", "2GiB"}}
	s := startStrata(t, opts)
	const n = 4200 // 4200 × 64 KiB ≈ 263 MiB: the memory tier is full
	url := func(i int) string { return fmt.Sprintf("/obj/64k/full?max-age=600&n=%d", i) }
	fetchAll(t, s.URL, n, url)
	t.Logf("memory tier bytes before stop: %v", metric(t, s.Admin, "strata_cache_memory_used_bytes"))
	t0 := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	stop := time.Since(t0)
	t.Logf("stop took %v; %s", stop, logLine(s, "memory tier written down"))
	t.Log(logLine(s, "index checkpoint written"))
	t0 = time.Now()
	opts.Args = append(opts.Args, "-listen", strings.TrimPrefix(s.URL, "http://"))
	s = startStrata(t, opts)
	defer s.Stop()
	t.Logf("start to listening: %v", time.Since(t0))
	awaitLog(t, s, "hot set read back into memory", 1)
	t.Log(logLine(s, "hot set read back into memory"))
	t.Logf("after restart: %s", fetchAll(t, s.URL, n, url))
}

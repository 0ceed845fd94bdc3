package e2e

// A stored object larger than a slice is served whole or not at all: a
// slice gone from the cache (evicted from memory, refused on its way to
// disk, damaged on disk) is fetched again from the origin before or while
// the body streams, or the request is a clean miss. Never a 200 that
// promises Content-Length and stops short.

import (
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startStrataConfig starts strata on loopback with only the YAML config
// (no -cache-path or -mem flags), in dir.
func startStrataConfig(t testing.TB, dir, yaml string) *strata {
	t.Helper()
	path := filepath.Join(dir, "strata.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcessOpts(t, procOpts{Wait: []string{"strata", "admin"}, Dir: dir}, strataBin(t),
		"-config", path, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0")
	return &strata{process: p, URL: p.URL("strata"), Admin: p.URL("admin"), Dir: dir}
}

// TestSlicedHitEvictedSlice is the reproduction of a truncated 200: a
// memory-only cache holds a 1,500,000-byte object as a record and two
// slices; four ranges over its first bytes make slice 0 hot, then 150
// objects of 700,000 bytes push the cold slice 1 out. The next GET must
// bring all 1,500,000 bytes from the cache, with slice 1 fetched again by
// Range: checked against the strong validator when the object has one,
// against the slice's recorded digest when it has none.
func TestSlicedHitEvictedSlice(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrataConfig(t, t.TempDir(), "origins:\n  - url: "+o.URL("origin")+"\n"+
		"cache:\n  memory:\n    capacity: 64MiB\n  disk:\n    path: \"\"\n")
	const size = 1500000
	want := objectBytes("/obj/1500000/big", 0, "", 0, size)
	for _, tc := range []struct {
		query  string
		status string // part of the last GET's Cache-Status
	}{
		{"max-age=600&etag=1", "hit"},
		{"max-age=600", "hit"},
	} {
		url := s.URL + "/obj/1500000/big?" + tc.query
		if r, body := get(t, url); r.StatusCode != 200 || string(body) != string(want) {
			t.Fatalf("%s: first GET %s, %d bytes", tc.query, r.Status, len(body))
		}
		for range 4 {
			if r, body := get(t, url, "Range: bytes=0-99"); r.StatusCode != 206 || string(body) != string(want[:100]) {
				t.Fatalf("%s: range %s, %q", tc.query, r.Status, body)
			}
		}
		for i := range 150 {
			resp, err := http.Get(fmt.Sprintf("%s/obj/700000/fill?max-age=600&n=%d&q=%s", s.URL, i, strings.ReplaceAll(tc.query, "&", "_")))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		r, body := getBody(t, url)
		if r.StatusCode != 200 || len(body) != size || string(body) != string(want) {
			t.Fatalf("%s: after eviction %s, Cache-Status %q, %d of %d bytes", tc.query, r.Status, cacheStatus(r.Header), len(body), size)
		}
		wantStatus(t, tc.query, r.Header, tc.status)
	}
	if n := metric(t, s.Admin, "strata_responses_cut_short_total"); n != 0 {
		t.Errorf("strata_responses_cut_short_total %v, want 0", n)
	}
}

// TestSlicedHitsUnderFaults: 1,000 GETs over 1.5-3 MB objects through a
// small memory tier (slices evicted), a disk tier whose admission rate
// refuses most evictions (slices refused; drive_writes_per_day -1, or the
// fresh device would fill past the rate), and a cache file whose bytes a
// goroutine keeps flipping while the load runs (slices damaged on disk).
// Every response must be complete and byte-exact; none may be cut short.
func TestSlicedHitsUnderFaults(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	dir := t.TempDir()
	s := startStrataConfig(t, dir, "origins:\n  - url: "+o.URL("origin")+"\n"+
		"cache:\n  memory:\n    capacity: 24MiB\n  disk:\n    path: "+filepath.Join(dir, "strata.cache")+"\n"+
		"    size: 256MiB\n    admission:\n      rate: 8MiB/s\n      burst: 8MiB\n      drive_writes_per_day: -1\n")
	stop := make(chan struct{})
	var flips sync.WaitGroup
	flips.Add(1)
	go func() { defer flips.Done(); flipCacheBytes(t, filepath.Join(dir, "strata.cache"), 256<<20, stop) }()

	const objects, requests, clients = 40, 1000, 8
	jobs := make(chan int, requests)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for range requests {
		jobs <- rng.IntN(objects)
	}
	close(jobs)
	var mu sync.Mutex
	var bad []string
	var statuses = map[string]int{}
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				size := int64(1500000 + i*(1500000/objects))
				path := fmt.Sprintf("/obj/%d/f%d", size, i)
				query := "max-age=600"
				if i%2 == 0 {
					query += "&etag=1"
				}
				msg, cs := checkObject(s.URL+path+"?"+query, path, size)
				mu.Lock()
				statuses[csKind(cs)]++
				if msg != "" {
					bad = append(bad, msg)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	flips.Wait()
	t.Logf("responses by Cache-Status: %v", statuses)
	// Each fault must have happened, or the test proved nothing about it.
	for _, m := range []string{"strata_disk_corruptions_total", `strata_disk_dropped_total{reason="admission"}`,
		"strata_disk_hits_total", "strata_cache_memory_evictions_total"} {
		v := metric(t, s.Admin, m)
		t.Logf("%s %v", m, v)
		if v == 0 {
			t.Errorf("%s is 0: the fault it counts never happened", m)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d responses wrong, first: %s", len(bad), requests, bad[0])
	}
	if n := metric(t, s.Admin, "strata_responses_cut_short_total"); n != 0 {
		t.Errorf("strata_responses_cut_short_total %v, want 0", n)
	}
}

// checkObject GETs url and says what is wrong with the response (""
// when it is a complete, byte-exact 200), with its Cache-Status.
func checkObject(url, path string, size int64) (string, string) {
	resp, err := http.Get(url)
	if err != nil {
		return fmt.Sprintf("GET %s: %v", url, err), ""
	}
	defer resp.Body.Close()
	h := crc32.NewIEEE()
	n, err := io.Copy(h, resp.Body)
	cs := cacheStatus(resp.Header)
	switch {
	case err != nil || n != size:
		return fmt.Sprintf("%s (%s): %d of %d bytes, %v", url, cs, n, size, err), cs
	case resp.StatusCode != 200:
		return fmt.Sprintf("%s (%s): %s", url, cs, resp.Status), cs
	case h.Sum32() != objectCRC(path, 0, "", size):
		return fmt.Sprintf("%s (%s): bytes differ from the origin's", url, cs), cs
	}
	return "", cs
}

// csKind reduces a Cache-Status to hit-memory, hit-disk, miss or other.
func csKind(cs string) string {
	switch {
	case strings.Contains(cs, "detail=memory"):
		return "hit-memory"
	case strings.Contains(cs, "detail=disk"):
		return "hit-disk"
	case strings.Contains(cs, "fwd="):
		return "miss"
	}
	return "other: " + cs
}

// flipCacheBytes flips one byte at a random offset of the cache file
// every 2 ms until stop, skipping the first 1 MiB (superblocks) and the
// first 4 KiB of every 16 MiB region (region headers: damage there is
// recovery's business, not a running cache's).
func flipCacheBytes(t testing.TB, path string, size int64, stop <-chan struct{}) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Errorf("open cache file: %v", err)
		return
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var b [1]byte
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		off := (1 << 20) + rng.Int64N(size-(1<<20))
		if off%(16<<20) < 4096 {
			continue
		}
		if _, err := f.ReadAt(b[:], off); err != nil {
			continue
		}
		b[0] ^= 0x5a
		_, _ = f.WriteAt(b[:], off)
	}
}

// getBody is get that tolerates a body cut short: it returns what arrived.
func getBody(t testing.TB, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// TestRandomRangesOfLargeObject is the peer benchmark's scenario 6 in
// small: 32 clients ask for random 1 MiB ranges of a 256 MiB object that
// has no validator, from cold, through a 32 MiB memory tier and a disk
// whose write queue the whole-object fill overruns unless it is paced.
// Every 206 must be complete and byte-exact, none cut short; ranges far
// ahead of the fill are answered by the origin, the rest by the fill and
// then, once it committed, by the cache, refetching by Range (checked
// against slice digests) any slice the cache lost.
func TestRandomRangesOfLargeObject(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	dir := t.TempDir()
	s := startStrataConfig(t, dir, "origins:\n  - url: "+o.URL("origin")+"\n"+
		"cache:\n  memory:\n    capacity: 32MiB\n  disk:\n    path: "+filepath.Join(dir, "strata.cache")+"\n"+
		"    size: 512MiB\n    admission:\n      rate: 1GiB/s\n  max_object_size: 512MiB\n")
	const size, span, clients = 256 << 20, 1 << 20, 32
	path := fmt.Sprintf("/obj/%d/ranges", size)
	url := s.URL + path + "?max-age=600"
	deadline := time.Now().Add(6 * time.Second)
	var mu sync.Mutex
	var bad []string
	var n int
	statuses := map[string]int{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 6))
			client := &http.Client{Timeout: 30 * time.Second}
			for time.Now().Before(deadline) {
				start := rng.Int64N(size - span)
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", start, start+span-1))
				msg, cs := checkRange(client, req, path, start, span)
				mu.Lock()
				n++
				statuses[csKind(cs)]++
				if msg != "" {
					bad = append(bad, msg)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d ranges; by Cache-Status: %v", n, statuses)
	for _, m := range []string{"strata_responses_cut_short_total", "strata_fill_lagged_total"} {
		if v := metric(t, s.Admin, m); v != 0 {
			t.Errorf("%s %v, want 0", m, v)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d ranges wrong, first: %s", len(bad), n, bad[0])
	}
	if statuses["hit-memory"]+statuses["hit-disk"] == 0 {
		t.Errorf("no range was a hit: the object was never stored")
	}
}

// checkRange sends req (a single Range of n bytes from start) and says
// what is wrong with the answer ("" for an exact 206), with its
// Cache-Status.
func checkRange(c *http.Client, req *http.Request, path string, start, n int64) (string, string) {
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Sprintf("%s: %v", req.Header.Get("Range"), err), ""
	}
	defer resp.Body.Close()
	cs := cacheStatus(resp.Header)
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil || int64(len(body)) != n:
		return fmt.Sprintf("%s (%s): %d of %d bytes, %v", req.Header.Get("Range"), cs, len(body), n, err), cs
	case resp.StatusCode != 206:
		return fmt.Sprintf("%s (%s): %s", req.Header.Get("Range"), cs, resp.Status), cs
	case string(body) != string(objectBytes(path, 0, "", start, n)):
		return fmt.Sprintf("%s (%s): bytes differ from the origin's", req.Header.Get("Range"), cs), cs
	}
	return "", cs
}

package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// The origin-shield case of partial caching: a 4 GiB object behind a slow origin,
// clients reading random 1 MiB ranges. The proxy must ask the origin only
// for the slices the ranges touch (each once), and stay small.
//
// The proxy is the real binary (cmd/proxy), so its peak RSS is its own.

const rangeSlice = 1 << 20

type rangeTarget struct {
	url string
	rss func() (peak int64, err error)
}

func startRangeProxy(t *testing.T, originURL string) rangeTarget {
	t.Helper()
	// GOMEMLIMIT: without a soft limit the Go heap may grow to twice the
	// live bytes (32 fetches × 2 slice buffers, the memory tier) before a
	// GC; measured peak RSS 330 MiB without, 213 MiB with.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "strata.yaml")
	yaml := "origins:\n  - url: " + originURL + "\n" +
		"cache:\n  memory:\n    capacity: 64MiB\n  disk:\n    path: " + filepath.Join(dir, "cache") +
		"\n    size: 1GiB\n  slice_size: 1MiB\n  max_object_size: 8GiB\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcessOpts(t, procOpts{Wait: []string{"strata"}, Env: []string{"GOMEMLIMIT=160MiB"}}, binPath(t, "proxy"),
		"-config", cfg, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0")
	return rangeTarget{url: p.URL("strata"), rss: func() (int64, error) {
		_, peak, err := p.RSS()
		return peak, err
	}}
}

func rangeRun(t *testing.T, target rangeTarget, objPath, query string, size int64, clients, rounds int) int {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	type job struct{ off int64 }
	var jobs []job
	touched := map[int64]bool{}
	for i := range clients * rounds {
		off := rng.Int64N(size - rangeSlice)
		if i%8 == 7 {
			off = jobs[rng.IntN(len(jobs))].off
		}
		jobs = append(jobs, job{off})
		for s := off / rangeSlice; s <= (off+rangeSlice-1)/rangeSlice; s++ {
			touched[s] = true
		}
	}
	client := &fasthttp.Client{ReadTimeout: 2 * time.Minute, MaxConnsPerHost: clients}
	for r := range rounds {
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func(j job) {
				defer wg.Done()
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI(target.url + objPath + "?" + query)
				req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", j.off, j.off+rangeSlice-1))
				if err := client.Do(req, resp); err != nil {
					t.Errorf("range at %d: %v", j.off, err)
					return
				}
				if resp.StatusCode() != 206 || !bytes.Equal(resp.Body(), objectBytes(objPath, 0, "", j.off, rangeSlice)) {
					t.Errorf("range at %d: status %d, %d bytes, not the object's", j.off, resp.StatusCode(), len(resp.Body()))
				}
			}(jobs[r*clients+c])
		}
		wg.Wait()
	}
	return len(touched)
}

// TestRangesOriginShield is the short e2e version of the target.
func TestRangesOriginShield(t *testing.T) {
	o := startOrigin(t)
	target := startRangeProxy(t, o.URL("origin"))
	const size = 4 << 30
	clients, rounds, rate := 32, 1, "16MiB"
	if os.Getenv("STRATA_RANGES_LONG") != "" {
		clients, rounds, rate = 32, 8, "4MiB"
	}
	start := time.Now()
	distinct := rangeRun(t, target, "/obj/4GiB", "etag=1&max-age=3600&rate="+rate, size, clients, rounds)
	st := getOriginStats(t, o)
	peak, err := target.rss()
	ratio := float64(st.Bytes) / float64(int64(distinct)*rangeSlice)
	t.Logf("%d requests in %v: %d distinct slices, origin %d requests, %d bytes = %.3f× the slices touched; proxy peak RSS %d MiB (%v)",
		clients*rounds, time.Since(start).Round(time.Millisecond), distinct, st.Requests, st.Bytes, ratio, peak>>20, err)
	if ratio > 1.1 {
		t.Errorf("origin bytes %.3f× the distinct slices touched, want ≤ 1.1", ratio)
	}
	if peak > 256<<20 {
		t.Errorf("proxy peak RSS %d MiB, want < 256", peak>>20)
	}
}

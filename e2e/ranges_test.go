package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"strata/hybrid"
	"strata/proxy"
)

// The origin-shield case of issue 6: a 4 GiB object behind a slow origin,
// clients reading random 1 MiB ranges. The proxy must ask the origin only
// for the slices the ranges touch (each once), and stay small.
//
// The proxy is the real binary (cmd/proxy, "strata listening on ...") when
// the module has one, else a proxy.Server over a memory-only hybrid.Cache
// in this process (RSS then counts the test too, so it is only reported).

const rangeSlice = 1 << 20

type rangeTarget struct {
	url string
	rss func() (peak int64, err error)
}

func startRangeProxy(t *testing.T, originURL string) rangeTarget {
	t.Helper()
	if _, err := os.Stat(filepath.Join(moduleRoot(t), "cmd", "proxy")); err == nil {
		// GOMEMLIMIT: without a soft limit the Go heap may grow to twice
		// the live bytes (32 fetches × 2 slice buffers, the memory tier)
		// before a GC; measured peak RSS 330 MiB without, 213 MiB with.
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
	cache, err := hybrid.Open(hybrid.Options{Memory: hybrid.MemoryOptions{Capacity: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(cache, proxy.Options{
		Origins:   []proxy.OriginOptions{{URL: originURL}},
		SliceSize: rangeSlice, MaxObjectSize: 8 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.ShutdownWithContext(ctx)
		<-done
		_ = srv.Close(ctx)
		_ = cache.Close(ctx)
	})
	return rangeTarget{url: "http://" + ln.Addr().String(), rss: func() (int64, error) {
		self := &process{PID: os.Getpid()}
		_, peak, err := self.RSS()
		return peak, err
	}}
}

func moduleRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// rangeRun makes clients×rounds random 1 MiB range requests (every
// eighth repeats an earlier one, to exercise coalescing and hits), checks
// every byte, and returns the distinct slices touched.
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
	if _, err := os.Stat(filepath.Join(moduleRoot(t), "cmd", "proxy")); err == nil && peak > 256<<20 {
		t.Errorf("proxy peak RSS %d MiB, want < 256", peak>>20)
	}
}

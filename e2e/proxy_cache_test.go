package e2e

// strata's caching behaviour through the real binary: misses, hits and
// their Age, expiry, what must not be stored, HEAD, coalescing, the disk
// tier and a restart.

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProxyMissHitAge: a miss is stored, the next requests are memory
// hits with the origin's bytes and an Age that grows with time.
func TestProxyMissHitAge(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	const pq = "/obj/4k?max-age=60"
	want := objectBytes("/obj/4k", 0, "", 0, 4096)

	r := curl(t, s.URL+pq)
	if r.Exit != 0 || r.Status != 200 || !bytes.Equal(r.Body, want) {
		t.Fatalf("miss: exit %d status %d, %d bytes (want the origin's 4096)", r.Exit, r.Status, len(r.Body))
	}
	if !isMiss(r.Header) || !strings.Contains(cacheStatus(r.Header), "stored") {
		t.Errorf("miss: Cache-Status %q, want a stored miss", cacheStatus(r.Header))
	}
	if !strings.Contains(r.Header.Get("Via"), "strata") {
		t.Errorf("miss: Via %q, want strata in it", r.Header.Get("Via"))
	}
	h1 := curl(t, s.URL+pq)
	wantStatus(t, "first hit", h1.Header, "strata; hit", "detail=memory")
	if !bytes.Equal(h1.Body, want) {
		t.Fatalf("first hit: body differs from the origin's")
	}
	age1, err := strconv.Atoi(h1.Header.Get("Age"))
	if err != nil {
		t.Fatalf("first hit: Age %q: %v", h1.Header.Get("Age"), err)
	}
	time.Sleep(1100 * time.Millisecond) // Age has one-second resolution
	h2 := curl(t, s.URL+pq)
	wantStatus(t, "second hit", h2.Header, "hit", "detail=memory")
	if age2, _ := strconv.Atoi(h2.Header.Get("Age")); age2 <= age1 {
		t.Errorf("Age did not grow: %d then %d", age1, age2)
	}
	if n := originCount(t, o, pq); n != 1 {
		t.Errorf("origin saw %d requests for %s, want 1", n, pq)
	}
}

// TestProxyExpiry: after max-age the object is fetched again.
func TestProxyExpiry(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	// max-age=2, not 1: the second request must land inside the freshness
	// window even when make test loads the machine.
	const pq = "/obj/1k?max-age=2"
	get(t, s.URL+pq)
	resp, _ := get(t, s.URL+pq)
	wantStatus(t, "fresh", resp.Header, "hit")
	time.Sleep(3100 * time.Millisecond)
	resp, body := get(t, s.URL+pq)
	if strings.Contains(cacheStatus(resp.Header), "hit") || len(body) != 1024 {
		t.Errorf("expired: Cache-Status %q, %d bytes; want a forward", cacheStatus(resp.Header), len(body))
	}
	if n := originCount(t, o, pq); n != 2 {
		t.Errorf("origin saw %d requests, want 2 (one before and one after expiry)", n)
	}
}

// TestProxyNotStored: no-store, private and Set-Cookie responses are
// passed through, never stored.
func TestProxyNotStored(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	for _, pq := range []string{
		"/obj/1k?max-age=60&no-store",
		"/obj/1k?max-age=60&private",
		"/obj/1k?max-age=60&cookie=1",
	} {
		for i := range 2 {
			r := curl(t, s.URL+pq)
			if r.Status != 200 || len(r.Body) != 1024 {
				t.Fatalf("%s #%d: status %d, %d bytes", pq, i, r.Status, len(r.Body))
			}
			if cs := cacheStatus(r.Header); strings.Contains(cs, "hit") || strings.Contains(cs, "stored") {
				t.Errorf("%s #%d: Cache-Status %q, want a forward, not stored", pq, i, cs)
			}
		}
		if n := originCount(t, o, pq); n != 2 {
			t.Errorf("%s: origin saw %d requests, want 2", pq, n)
		}
	}
}

// TestProxyHead: HEAD is answered from a stored GET, with the length and
// no body; a HEAD miss does not break a later GET.
func TestProxyHead(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	h := curl(t, "-I", s.URL+"/obj/8k/head-first?max-age=60")
	if h.Status != 200 || h.Header.Get("Content-Length") != "8192" {
		t.Fatalf("HEAD miss: status %d, Content-Length %q", h.Status, h.Header.Get("Content-Length"))
	}
	g := curl(t, s.URL+"/obj/8k/head-first?max-age=60")
	if g.Status != 200 || !bytes.Equal(g.Body, objectBytes("/obj/8k/head-first", 0, "", 0, 8192)) {
		t.Fatalf("GET after HEAD: status %d, %d bytes", g.Status, len(g.Body))
	}

	get(t, s.URL+"/obj/8k?max-age=60")
	h = curl(t, "-I", s.URL+"/obj/8k?max-age=60")
	if h.Status != 200 || h.Header.Get("Content-Length") != "8192" {
		t.Fatalf("HEAD hit: status %d, Content-Length %q", h.Status, h.Header.Get("Content-Length"))
	}
	wantStatus(t, "HEAD after GET", h.Header, "hit")
	if n := originCount(t, o, "/obj/8k?max-age=60"); n != 1 {
		t.Errorf("origin saw %d requests for the GET+HEAD object, want 1", n)
	}
}

// TestProxyCoalescing: 100 concurrent misses for one URL make one origin
// request; every client gets the whole, right body.
func TestProxyCoalescing(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	const pq = "/obj/512k?max-age=60&delay=300ms"
	want := objectBytes("/obj/512k", 0, "", 0, 512<<10)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := range 100 {
		wg.Go(func() {
			resp, body := get(t, s.URL+pq)
			if resp.StatusCode != 200 || !bytes.Equal(body, want) {
				errs <- fmt.Sprintf("client %d: %s, %d bytes", i, resp.Status, len(body))
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := originCount(t, o, pq); n != 1 {
		t.Errorf("origin saw %d requests for 100 concurrent misses, want 1", n)
	}
}

// TestProxyDiskAndRestart: an object evicted from a small memory tier is
// a disk hit; after SIGTERM (exit 0, each shutdown step logged) a new
// strata on the same cache file still answers it from disk, without the
// origin.
func TestProxyDiskAndRestart(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	dir := t.TempDir()
	opts := strataOpts{Origin: o.URL("origin"), Dir: dir, Mem: "4MiB"}
	s := startStrata(t, opts)
	const pq = "/obj/200k/cold?max-age=600"
	want := objectBytes("/obj/200k/cold", 0, "", 0, 200<<10)
	get(t, s.URL+pq)
	evictToDisk(t, s, 40)
	resp, body := awaitDiskHit(t, s.URL+pq)
	wantStatus(t, "after eviction", resp.Header, "hit", "detail=disk")
	if !bytes.Equal(body, want) {
		t.Fatalf("disk hit: body differs from the origin's (%d bytes)", len(body))
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v (want exit 0); output:\n%s", err, s.Output())
	}
	for _, step := range []string{"stop accepting", "close proxy", "close cache"} {
		if !strings.Contains(s.Output(), "shutdown: "+step) {
			t.Errorf("shutdown step %q not logged; output:\n%s", step, s.Output())
		}
	}

	// The same address: the cache key holds the Host, port included.
	opts.Args = []string{"-listen", strings.TrimPrefix(s.URL, "http://")}
	s2 := startStrata(t, opts)
	resp, body = get(t, s2.URL+pq)
	wantStatus(t, "after restart", resp.Header, "hit", "detail=disk")
	if !bytes.Equal(body, want) {
		t.Fatalf("after restart: body differs (%d bytes)", len(body))
	}
	if n := originCount(t, o, pq); n != 1 {
		t.Errorf("origin saw %d requests for %s, want 1", n, pq)
	}
}

package proxy

import (
	"net/http"
	"testing"
	"time"
)

func TestMissThenHitWithGrowingAge(t *testing.T) {
	p := newPair(t, cacheable("hello"), nil)
	r := p.get("/a")
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored")
	expectHeader(t, r, "Via", "1.1 strata")
	if string(r.Body()) != "hello" {
		t.Fatalf("body %q", r.Body())
	}
	p.clock.Advance(7 * time.Second)
	r = p.get("/a")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	expectHeader(t, r, "Age", "7")
	expectHeader(t, r, "Content-Type", "text/plain")
	if string(r.Body()) != "hello" {
		t.Fatalf("hit body %q", r.Body())
	}
	p.clock.Advance(3 * time.Second)
	p.store.Disk.Store(true)
	r = p.get("/a")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=disk")
	expectHeader(t, r, "Age", "10")
	if n := p.hits.Load(); n != 1 {
		t.Fatalf("origin saw %d requests, want 1", n)
	}
	p.clock.Advance(60 * time.Second)
	r = p.get("/a")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; stored")
	if n := p.hits.Load(); n != 2 {
		t.Fatalf("origin saw %d requests after expiry, want 2", n)
	}
}

func TestNotStored(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		req  []string
		cs   string
	}{
		{"no-store", withHeaders("Cache-Control", "no-store"), nil, "strata; fwd=uri-miss"},
		{"private", withHeaders("Cache-Control", "private, max-age=60"), nil, "strata; fwd=uri-miss"},
		{"set-cookie", withHeaders("Cache-Control", "max-age=60", "Set-Cookie", "a=b"), nil, "strata; fwd=uri-miss"},
		{"no freshness", withHeaders(), nil, "strata; fwd=uri-miss"},
		{"vary star", withHeaders("Cache-Control", "max-age=60", "Vary", "Accept-Encoding, *"), nil, "strata; fwd=uri-miss"},
		{"authorization", withHeaders("Cache-Control", "max-age=60"), []string{"Authorization", "Basic eDp5"}, "strata; fwd=uri-miss"},
		{"request no-store", withHeaders("Cache-Control", "max-age=60"), []string{"Cache-Control", "no-store"}, "strata; fwd=uri-miss"},
		{"POST", withHeaders("Cache-Control", "max-age=60"), []string{"X-Method", "POST"}, "strata; fwd=bypass"},
		{"500", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, nil, "strata; fwd=uri-miss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, tc.h, nil)
			for i := range 2 {
				method := "GET"
				if tc.name == "POST" {
					method = "POST"
				}
				r := p.do(method, "/x", tc.req...)
				expectHeader(t, r, "Cache-Status", tc.cs)
				if i == 0 && tc.name == "set-cookie" {
					expectHeader(t, r, "Set-Cookie", "a=b")
				}
			}
			if n := p.hits.Load(); n != 2 {
				t.Errorf("origin saw %d requests, want 2", n)
			}
			if n := p.store.Len(); n != 0 {
				t.Errorf("store holds %d entries", n)
			}
		})
	}
}

func withHeaders(kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Add(kv[i], kv[i+1])
		}
		_, _ = w.Write([]byte("body"))
	}
}

func TestHeadFromStoredGet(t *testing.T) {
	p := newPair(t, cacheable("0123456789"), nil)
	p.get("/h")
	r := p.do("HEAD", "/h")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	if r.Header.ContentLength() != 10 || len(r.Body()) != 0 {
		t.Fatalf("HEAD: Content-Length %d, body %q", r.Header.ContentLength(), r.Body())
	}
	// A HEAD miss fills with a GET, so a later GET hits.
	r = p.do("HEAD", "/h2")
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored")
	// The HEAD is answered before the fill's GET body has ended; a GET
	// sent at once would join that fill (collapsed), not hit.
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	r = p.get("/h2")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	if string(r.Body()) != "0123456789" {
		t.Fatalf("GET after HEAD miss: %q", r.Body())
	}
}

func TestRequestDirectives(t *testing.T) {
	p := newPair(t, cacheable("x"), nil)
	r := p.get("/d", "Cache-Control", "only-if-cached")
	if r.StatusCode() != 504 {
		t.Fatalf("only-if-cached on a miss: %d, want 504", r.StatusCode())
	}
	// A client has the whole body a moment before the fill commits it.
	committed := func() { waitFor(t, func() bool { return p.srv.nfills.Load() == 0 }) }
	p.get("/d")
	committed()
	p.clock.Advance(10 * time.Second)
	// httpcache.Fresh (age 10 < 60), but older than the request's max-age: the
	// request's semantics refused it (RFC 9211 fwd=request).
	r = p.get("/d", "Cache-Control", "max-age=5")
	expectHeader(t, r, "Cache-Status", "strata; fwd=request; stored")
	committed()
	r = p.get("/d", "Cache-Control", "no-cache")
	expectHeader(t, r, "Cache-Status", "strata; fwd=request; stored")
	committed()
	r = p.get("/d")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
}

// TestHitKeepsAlive: hits and misses leave the client connection open
// (a Date-installing step once marked every response Connection: close).
func TestHitKeepsAlive(t *testing.T) {
	p := newPair(t, cacheable("x"), nil)
	for i := range 3 {
		r := p.get("/k")
		if r.ConnectionClose() || len(r.Header.Peek("Connection")) > 0 {
			t.Fatalf("response %d: Connection %q, want keep-alive", i, r.Header.Peek("Connection"))
		}
	}
}

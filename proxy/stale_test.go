package proxy

import (
	"sync"
	"testing"
	"time"
)

// TestStaleWhileRevalidate: within the window the stale response is
// served at once and one background revalidation refreshes the entry.
func TestStaleWhileRevalidate(t *testing.T) {
	g := newGate()
	p, o := newVersioned(t, "max-age=10, stale-while-revalidate=30", true, false, smallBody, nil)
	p.gets("/w")
	p.clock.Advance(15 * time.Second)
	o.v.Store(2)
	o.hold.Store(g)
	var wg sync.WaitGroup
	for range 8 { // concurrent stale hits start one revalidation
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.get("/w")
			expectHeader(t, r, "Cache-Status", "strata; hit; detail=stale")
			expectHeader(t, r, "Age", "15")
			expectBody(t, r, smallBody(1))
		}()
	}
	wg.Wait()
	waitFor(t, func() bool { return p.hits.Load() == 2 })
	g.open()
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	r := p.gets("/w")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	expectBody(t, r, smallBody(2))
	if n := p.hits.Load(); n != 2 {
		t.Fatalf("origin saw %d requests, want 2 (one revalidation)", n)
	}
	// Past the window: a synchronous revalidation.
	p.clock.Advance(50 * time.Second)
	r = p.gets("/w")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
}

// TestStaleIfError: the stored response stands in for a failing origin
// within stale-if-error, never beyond it.
func TestStaleIfError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int64
		wantAfter int // status once the window is over
	}{
		{"500", 500, 500},
		{"502", 502, 502},
		{"503", 503, 503},
		{"504", 504, 504},
		{"connection error", -1, 200}, // still served: StaleIfUnreachable (1h)
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, o := newVersioned(t, "max-age=10, stale-if-error=60", true, false, smallBody, nil)
			p.gets("/e")
			p.clock.Advance(30 * time.Second)
			o.status.Store(tc.status)
			r := p.gets("/e")
			if r.StatusCode() != 200 {
				t.Fatalf("status %d, want the stale 200", r.StatusCode())
			}
			expectHeader(t, r, "Cache-Status", "strata; fwd=stale; detail=stale-if-error")
			expectBody(t, r, smallBody(1))
			p.clock.Advance(60 * time.Second)
			r = p.gets("/e")
			if r.StatusCode() != tc.wantAfter {
				t.Fatalf("after the window: status %d, want %d", r.StatusCode(), tc.wantAfter)
			}
			// The error did not replace the entry: the origin is back.
			o.status.Store(0)
			r = p.gets("/e")
			expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
		})
	}
}

// TestStaleIfUnreachable: with no directive, a disconnected origin gets
// the stored response served within StaleIfUnreachable (§4.2.4), never a
// 5xx answer, never beyond the bound or when forbidden.
func TestStaleIfUnreachable(t *testing.T) {
	p, o := newVersioned(t, "max-age=10", true, false, smallBody, func(opts *Options) { opts.StaleIfUnreachable = time.Minute })
	p.gets("/u")
	p.clock.Advance(30 * time.Second)
	o.status.Store(-1)
	r := p.gets("/u")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; detail=stale-if-error")
	expectBody(t, r, smallBody(1))
	if r := p.gets("/u", "Cache-Control", "no-cache"); r.StatusCode() != 502 {
		t.Fatalf("request no-cache: %d, want 502", r.StatusCode())
	}
	o.status.Store(503)
	if r := p.gets("/u"); r.StatusCode() != 503 {
		t.Fatalf("503 without stale-if-error: %d, want 503", r.StatusCode())
	}
	o.status.Store(-1)
	p.clock.Advance(time.Minute)
	if r := p.gets("/u"); r.StatusCode() != 502 {
		t.Fatalf("beyond the bound: %d, want 502", r.StatusCode())
	}
	q, qo := newVersioned(t, "max-age=10", true, false, smallBody, func(opts *Options) { opts.StaleIfUnreachable = -1 })
	q.gets("/u")
	q.clock.Advance(30 * time.Second)
	qo.status.Store(-1)
	if r := q.gets("/u"); r.StatusCode() != 502 {
		t.Fatalf("disabled: %d, want 502", r.StatusCode())
	}
}

// TestRequestStaleIfError: the request directive opens the window too.
func TestRequestStaleIfError(t *testing.T) {
	p, o := newVersioned(t, "max-age=10", true, false, smallBody, nil)
	p.gets("/re")
	p.clock.Advance(30 * time.Second)
	o.status.Store(503)
	if r := p.gets("/re"); r.StatusCode() != 503 {
		t.Fatalf("without stale-if-error: %d, want 503", r.StatusCode())
	}
	r := p.gets("/re", "Cache-Control", "stale-if-error=60")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; detail=stale-if-error")
}

// TestStaleForbidden: must-revalidate, proxy-revalidate, s-maxage and
// no-cache forbid every kind of stale serving (RFC 9111 §4.2.4).
func TestStaleForbidden(t *testing.T) {
	for _, cc := range []string{
		"max-age=10, must-revalidate, stale-while-revalidate=60, stale-if-error=60",
		"max-age=10, proxy-revalidate, stale-while-revalidate=60, stale-if-error=60",
		"s-maxage=10, stale-while-revalidate=60, stale-if-error=60",
		"no-cache, max-age=10, stale-while-revalidate=60, stale-if-error=60",
	} {
		t.Run(cc, func(t *testing.T) {
			p, o := newVersioned(t, cc, true, false, smallBody, func(opts *Options) { opts.Policy.Grace = time.Hour })
			p.gets("/f")
			p.clock.Advance(20 * time.Second)
			o.status.Store(503)
			r := p.gets("/f")
			if r.StatusCode() != 503 {
				t.Fatalf("status %d (%s), want the origin's 503", r.StatusCode(), r.Header.Peek("Cache-Status"))
			}
			o.status.Store(-1)
			if r := p.gets("/f"); r.StatusCode() != 502 {
				t.Fatalf("connection error: status %d, want 502", r.StatusCode())
			}
			if r := p.gets("/f", "Cache-Control", "max-stale=600"); r.StatusCode() == 200 && !(cc[:2] == "no") {
				t.Fatalf("max-stale served a must-revalidate response")
			}
		})
	}
}

// TestGrace: the configured grace acts as stale-while-revalidate and
// stale-if-error for responses that carry neither.
func TestGrace(t *testing.T) {
	p, o := newVersioned(t, "max-age=10", true, false, smallBody, func(opts *Options) { opts.Policy.Grace = time.Minute })
	p.gets("/g")
	p.clock.Advance(30 * time.Second)
	o.status.Store(503)
	r := p.gets("/g") // served stale; the background revalidation gets 503 and keeps the entry
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=stale")
	waitFor(t, func() bool { return p.hits.Load() == 2 && p.waiters("/g") == -1 })
	r = p.gets("/g")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=stale")
	expectBody(t, r, smallBody(1))
	p.clock.Advance(time.Minute)
	if r := p.gets("/g"); r.StatusCode() != 503 {
		t.Fatalf("past the grace: %d, want 503", r.StatusCode())
	}
}

// TestRequestMaxStaleAndOnlyIfCached covers the request directives on a
// stale entry.
func TestRequestMaxStaleAndOnlyIfCached(t *testing.T) {
	p, _ := newVersioned(t, "max-age=10", true, false, smallBody, nil)
	p.gets("/ms")
	p.clock.Advance(30 * time.Second)
	r := p.gets("/ms", "Cache-Control", "max-stale=60")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=stale")
	r = p.gets("/ms", "Cache-Control", "max-stale=5")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
	p.clock.Advance(30 * time.Second)
	if r := p.gets("/ms", "Cache-Control", "only-if-cached"); r.StatusCode() != 504 {
		t.Fatalf("only-if-cached on a stale entry: %d, want 504", r.StatusCode())
	}
	r = p.gets("/ms", "Cache-Control", "only-if-cached, max-stale")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=stale")
	r = p.gets("/ms", "Cache-Control", "min-fresh=600")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
	if n := p.hits.Load(); n != 3 {
		t.Fatalf("origin saw %d requests, want 3", n)
	}
}

package proxy

import (
	"net/http"
	"testing"
	"time"
)

// TestNoContentStored: a 204 with explicit freshness is stored like any
// heuristically cacheable status (RFC 9111 §3, RFC 9110 §15.3.5) and
// served with no content while fresh; stale, it goes back to the origin.
// fasthttp's client gives a 204 no body stream, which the fill used to
// take for "not storable".
func TestNoContentStored(t *testing.T) {
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("X-Kind", "empty")
		w.WriteHeader(http.StatusNoContent)
	}, nil)
	committed := func() { waitFor(t, func() bool { return p.srv.nfills.Load() == 0 }) }
	r := p.get("/nc")
	if r.StatusCode() != http.StatusNoContent || len(r.Body()) != 0 {
		t.Fatalf("miss: %d %q", r.StatusCode(), r.Body())
	}
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored")
	committed()
	for _, disk := range []bool{false, true} {
		p.store.Disk.Store(disk)
		r = p.get("/nc")
		if r.StatusCode() != http.StatusNoContent || len(r.Body()) != 0 {
			t.Fatalf("hit: %d %q", r.StatusCode(), r.Body())
		}
		expectHeader(t, r, "X-Kind", "empty")
		expectHeader(t, r, "Content-Length", "")
		if n := p.hits.Load(); n != 1 {
			t.Fatalf("origin saw %d requests, want 1", n)
		}
	}
	p.clock.Advance(2 * time.Minute)
	r = p.get("/nc")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; stored")
	if n := p.hits.Load(); n != 2 {
		t.Fatalf("stale 204: origin saw %d requests, want 2", n)
	}
}

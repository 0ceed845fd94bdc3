package proxy

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

func TestLoopLooped(t *testing.T) {
	l, err := newLoop(LoopOptions{Token: "strata", Allow: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.id = []byte("abcd")
	tests := []struct {
		name  string
		lines []string // CDN-Loop field lines
		want  bool
	}{
		{"none", nil, false},
		{"other cdn", []string{"foo, bar; x=1"}, false},
		{"one of ours", []string{"strata; node=1111"}, false},
		{"two of ours", []string{"strata; node=1111, other", "STRATA;node=2222"}, false},
		{"three of ours", []string{"strata; node=1", "strata; node=2", "strata; node=3"}, true},
		{"three in one line", []string{"strata, strata ,strata"}, true},
		{"ourselves at once", []string{"strata; node=abcd"}, true},
		{"ourselves after others", []string{"cdn-a, strata; v=1; node=abcd"}, true},
		{"our id under another token", []string{"other; node=abcd"}, false},
		{"token as a prefix", []string{"strata2, stratax, xstrata"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			for _, v := range tc.lines {
				h.Add("CDN-Loop", v)
			}
			if got := l.looped(&h); got != tc.want {
				t.Fatalf("looped(%q) = %v, want %v", tc.lines, got, tc.want)
			}
		})
	}
}

func TestLoopAllowNegative(t *testing.T) {
	l, _ := newLoop(LoopOptions{Token: "edge", Allow: -1}, nil)
	var h fasthttp.RequestHeader
	if l.looped(&h) {
		t.Fatal("no CDN-Loop: not a loop")
	}
	h.Add("Cdn-Loop", "edge")
	if !l.looped(&h) {
		t.Fatal("Allow < 0: one element of ours is a loop")
	}
}

func TestLoopOptionsValidate(t *testing.T) {
	for _, tok := range []string{"strata", "my-cdn.example", "a_b~1"} {
		o := LoopOptions{Token: tok}
		if err := o.Validate(); err != nil {
			t.Errorf("%q: %v", tok, err)
		}
	}
	for _, tok := range []string{"", "a b", "a,b", "a;b", "x=y", "é"} {
		o := LoopOptions{Token: tok}
		if err := o.Validate(); err == nil {
			t.Errorf("%q accepted", tok)
		}
	}
}

func TestLoopLoopedAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under -race")
	}
	l, _ := newLoop(LoopOptions{}.withDefaults(), nil)
	var h fasthttp.RequestHeader
	h.Add("CDN-Loop", "a, strata; node=1, b")
	h.Add("Accept", "*/*")
	if n := testing.AllocsPerRun(100, func() { l.looped(&h) }); n != 0 {
		t.Fatalf("looped allocates %.1f times", n)
	}
}

func (o LoopOptions) withDefaults() LoopOptions { o.EnsureDefaults(); return o }

// TestLoopOriginRequest: the origin sees the client's CDN-Loop plus our
// element, on misses and on passes.
func TestLoopOriginRequest(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, strings.Join(r.Header.Values("CDN-Loop"), ", "))
		mu.Unlock()
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write([]byte("x"))
	}, nil)
	fasthttp.ReleaseResponse(p.get("/a", "CDN-Loop", "upstream-cdn"))
	fasthttp.ReleaseResponse(p.do("POST", "/b"))
	want := "strata; node=" + string(p.srv.loop.id)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "upstream-cdn, "+want || seen[1] != want {
		t.Fatalf("origin saw CDN-Loop %q; want [%q %q]", seen, "upstream-cdn, "+want, want)
	}
}

// TestLoopSelf: a node whose origin leads back to itself answers the
// nested request 508 at once: the origin is reached once, not again and
// again until something times out.
func TestLoopSelf(t *testing.T) {
	var p *pair
	var nested int
	p = newPair(t, func(w http.ResponseWriter, r *http.Request) {
		// The "origin" forwards to the proxy again, as a misconfigured
		// tier would.
		var kv []string
		for _, v := range r.Header.Values("CDN-Loop") {
			kv = append(kv, "CDN-Loop", v)
		}
		resp := p.get(r.URL.Path, kv...)
		defer fasthttp.ReleaseResponse(resp)
		nested = resp.StatusCode()
		w.WriteHeader(resp.StatusCode())
	}, nil)
	resp := p.get("/loop")
	defer fasthttp.ReleaseResponse(resp)
	if resp.StatusCode() != fasthttp.StatusLoopDetected || nested != fasthttp.StatusLoopDetected {
		t.Fatalf("status %d, nested %d; want 508 both", resp.StatusCode(), nested)
	}
	if n := p.hits.Load(); n != 1 {
		t.Fatalf("origin reached %d times; want 1", n)
	}
	if n := testutil.ToFloat64(p.srv.loop.refused); n != 1 {
		t.Fatalf("strata_loop_detected_total %v; want 1", n)
	}
	if probs, err := testutil.CollectAndLint(p.srv.loop.refused); err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
}

package proxy

import (
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestClientConditionalFromCache: GET/HEAD conditionals answered 304 from
// a fresh stored response (RFC 9110 §13.1.2, §13.1.3, §13.2.2).
func TestClientConditionalFromCache(t *testing.T) {
	lm := string(fasthttp.AppendHTTPDate(nil, lmTime.Add(time.Hour))) // v1's Last-Modified
	before := string(fasthttp.AppendHTTPDate(nil, lmTime))
	for _, tc := range []struct {
		name   string
		method string
		kv     []string
		want   int
	}{
		{"inm match", "GET", []string{"If-None-Match", `"v1"`}, 304},
		{"inm weak match", "GET", []string{"If-None-Match", `W/"v1"`}, 304},
		{"inm list", "GET", []string{"If-None-Match", `"x", "v1"`}, 304},
		{"inm star", "GET", []string{"If-None-Match", `*`}, 304},
		{"inm mismatch", "GET", []string{"If-None-Match", `"v2"`}, 200},
		{"inm head", "HEAD", []string{"If-None-Match", `"v1"`}, 304},
		{"ims equal", "GET", []string{"If-Modified-Since", lm}, 304},
		{"ims before", "GET", []string{"If-Modified-Since", before}, 200},
		{"ims invalid", "GET", []string{"If-Modified-Since", "yesterday"}, 200},
		{"inm wins over ims", "GET", []string{"If-None-Match", `"v2"`, "If-Modified-Since", lm}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newVersioned(t, "max-age=60", true, true, smallBody, nil)
			p.gets("/c")
			r := p.dos(tc.method, "/c", tc.kv...)
			if r.StatusCode() != tc.want {
				t.Fatalf("status %d, want %d", r.StatusCode(), tc.want)
			}
			expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
			if tc.want == 304 {
				expectHeader(t, r, "ETag", `"v1"`)
				expectHeader(t, r, "Cache-Control", "max-age=60")
				r.Header.SetNoDefaultContentType(true) // the client's default, not the wire
				expectHeader(t, r, "Content-Type", "")
				expectHeader(t, r, "Last-Modified", "")
				if len(r.Body()) != 0 {
					t.Fatalf("304 with a body %q", r.Body())
				}
			}
			if n := p.hits.Load(); n != 1 {
				t.Fatalf("origin saw %d requests, want 1", n)
			}
		})
	}
}

// TestClientConditionalNon2xx: a stored 404 is never turned into a 304.
func TestClientConditionalNon2xx(t *testing.T) {
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("ETag", `"gone"`)
		w.WriteHeader(404)
	}, nil)
	p.gets("/404")
	r := p.gets("/404", "If-None-Match", `"gone"`)
	if r.StatusCode() != 404 {
		t.Fatalf("status %d, want 404", r.StatusCode())
	}
}

// TestClientConditionalOnMiss: the fill fetches unconditionally (the
// origin sees no If-None-Match), the client's conditional is evaluated
// against the fetched response, and the full body is stored for others.
func TestClientConditionalOnMiss(t *testing.T) {
	p, o := newVersioned(t, "max-age=60", true, false, smallBody, nil)
	r := p.gets("/m", "If-None-Match", `"v1"`)
	if r.StatusCode() != 304 {
		t.Fatalf("status %d, want 304", r.StatusCode())
	}
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored")
	if got := o.lastINM.Load(); got != "" {
		t.Fatalf("the fill forwarded If-None-Match %q", got)
	}
	r = p.gets("/m")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	expectBody(t, r, smallBody(1))
	// Not storable: the leader's private response is evaluated too.
	q, _ := newVersioned(t, "private", true, false, smallBody, nil)
	r = q.gets("/p", "If-None-Match", `"v1"`)
	if r.StatusCode() != 304 {
		t.Fatalf("private: status %d, want 304", r.StatusCode())
	}
	r = q.gets("/p", "If-None-Match", `"nope"`)
	if r.StatusCode() != 200 {
		t.Fatalf("private mismatch: status %d, want 200", r.StatusCode())
	}
	expectBody(t, r, smallBody(1))
}

// TestClientConditionalAfterRevalidation: a stale entry refreshed by a
// 304 answers the client's matching conditional with 304.
func TestClientConditionalAfterRevalidation(t *testing.T) {
	p, _ := newVersioned(t, "max-age=10", true, false, smallBody, nil)
	p.gets("/cr")
	p.clock.Advance(20 * time.Second)
	r := p.gets("/cr", "If-None-Match", `"v1"`)
	if r.StatusCode() != 304 {
		t.Fatalf("status %d, want 304", r.StatusCode())
	}
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
}

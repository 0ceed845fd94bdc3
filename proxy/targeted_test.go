package proxy

import (
	"net/http"
	"testing"
)

// TestTargetedServer: CDN-Cache-Control (RFC 9213) decides storing in
// place of Cache-Control and is forwarded unchanged; the field addressed to
// strata beats both and is removed before forwarding, on a miss and on a
// hit; a 304 refresh does not store it either.
func TestTargetedServer(t *testing.T) {
	tests := []struct {
		name      string
		headers   map[string]string
		mod       func(*Options)
		wantHits  int64 // origin requests for two client requests
		forwarded map[string]string
	}{
		{"CDN-Cache-Control stores what Cache-Control forbids",
			map[string]string{"Cache-Control": "no-store", "CDN-Cache-Control": "max-age=60"}, nil, 1,
			map[string]string{"Cache-Control": "no-store", "CDN-Cache-Control": "max-age=60"}},
		{"CDN-Cache-Control forbids what Cache-Control allows",
			map[string]string{"Cache-Control": "max-age=60", "CDN-Cache-Control": "no-store"}, nil, 2,
			map[string]string{"Cache-Control": "max-age=60", "CDN-Cache-Control": "no-store"}},
		{"invalid CDN-Cache-Control is ignored",
			map[string]string{"Cache-Control": "max-age=60", "CDN-Cache-Control": "no-store,"}, nil, 1,
			map[string]string{"CDN-Cache-Control": "no-store,"}},
		{"strata's field beats both and is dropped",
			map[string]string{"Cache-Control": "no-store", "CDN-Cache-Control": "no-store", "Strata-Cache-Control": "max-age=60"}, nil, 1,
			map[string]string{"Cache-Control": "no-store", "CDN-Cache-Control": "no-store", "Strata-Cache-Control": ""}},
		{"a renamed field",
			map[string]string{"Cache-Control": "max-age=60", "Edge-Cache-Control": "no-store", "Strata-Cache-Control": "max-age=5"},
			func(o *Options) { o.Policy.TargetedField = "Edge-Cache-Control" }, 2,
			map[string]string{"Edge-Cache-Control": "", "Strata-Cache-Control": "max-age=5"}},
		{"CDN-Cache-Control turned off",
			map[string]string{"Cache-Control": "no-store", "CDN-Cache-Control": "max-age=60"},
			func(o *Options) { o.Policy.IgnoreCDNCacheControl = true }, 2,
			map[string]string{"CDN-Cache-Control": "max-age=60"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				_, _ = w.Write([]byte("body"))
			}, tt.mod)
			for i := range 2 {
				r := p.get("/t")
				for k, v := range tt.forwarded {
					if got := string(r.Header.Peek(k)); got != v {
						t.Errorf("request %d: %s %q, want %q", i, k, got, v)
					}
				}
				waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			}
			if n := p.hits.Load(); n != tt.wantHits {
				t.Errorf("origin saw %d requests, want %d", n, tt.wantHits)
			}
		})
	}
}

// TestTargetedRefresh: a 304 carrying strata's field freshens the stored
// response by it, and the field is not stored with the refreshed headers.
func TestTargetedRefresh(t *testing.T) {
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Strata-Cache-Control", "max-age=0")
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.Header().Set("Strata-Cache-Control", "max-age=600")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte("body"))
	}, nil)
	for i := range 3 {
		r := p.get("/r")
		expectHeader(t, r, "Strata-Cache-Control", "")
		if string(r.Body()) != "body" {
			t.Fatalf("request %d: body %q", i, r.Body())
		}
		waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	}
	if n := p.hits.Load(); n != 2 {
		t.Errorf("origin saw %d requests, want 2 (fill, then one 304 that made it fresh for 600s)", n)
	}
}

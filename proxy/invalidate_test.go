package proxy

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestUnsafeMethodInvalidates: RFC 9111 §4.4 over methods, statuses and
// Location / Content-Location.
func TestUnsafeMethodInvalidates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   string
		status   int
		hdr      []string // response header to the unsafe request
		gone     []string // paths invalidated
		kept     []string // paths still hits
		hostPath string   // request host override
	}{
		{name: "POST 200", method: "POST", status: 200, gone: []string{"/t"}, kept: []string{"/other"}},
		{name: "PUT 201", method: "PUT", status: 201, gone: []string{"/t"}},
		{name: "DELETE 204", method: "DELETE", status: 204, gone: []string{"/t"}},
		{name: "PATCH 302", method: "PATCH", status: 302, gone: []string{"/t"}},
		{name: "unknown method", method: "FROB", status: 200, gone: []string{"/t"}},
		{name: "POST 404 keeps", method: "POST", status: 404, kept: []string{"/t"}},
		{name: "POST 500 keeps", method: "POST", status: 500, kept: []string{"/t"}},
		{name: "OPTIONS keeps", method: "OPTIONS", status: 200, kept: []string{"/t"}},
		{name: "Location relative", method: "POST", status: 201, hdr: []string{"Location", "other"},
			gone: []string{"/t", "/other"}},
		{name: "Content-Location absolute", method: "PUT", status: 200,
			hdr: []string{"Content-Location", "http://example.com/other"}, gone: []string{"/t", "/other"}},
		{name: "Location other host", method: "POST", status: 201,
			hdr: []string{"Location", "http://elsewhere.example/other"}, gone: []string{"/t"}, kept: []string{"/other"}},
		{name: "Location other scheme", method: "POST", status: 201,
			hdr: []string{"Location", "https://example.com/other"}, gone: []string{"/t"}, kept: []string{"/other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == "GET" {
					cacheable("content "+r.URL.Path)(w, r)
					return
				}
				for i := 0; i+1 < len(tc.hdr); i += 2 {
					w.Header().Set(tc.hdr[i], tc.hdr[i+1])
				}
				w.WriteHeader(tc.status)
			}, nil)
			for _, path := range []string{"/t", "/other"} {
				p.gets(path)
			}
			r := p.do(tc.method, "/t")
			if r.StatusCode() != tc.status {
				t.Fatalf("unsafe request: %d", r.StatusCode())
			}
			for _, path := range tc.gone {
				if r := p.gets(path); !strings.Contains(string(r.Header.Peek("Cache-Status")), "fwd=uri-miss") {
					t.Errorf("%s not invalidated: %s", path, r.Header.Peek("Cache-Status"))
				}
			}
			for _, path := range tc.kept {
				if r := p.gets(path); !strings.Contains(string(r.Header.Peek("Cache-Status")), "hit") {
					t.Errorf("%s invalidated: %s", path, r.Header.Peek("Cache-Status"))
				}
			}
		})
	}
}

// TestInvalidationRemovesVariantsAndSlices: nothing of the URL is left in
// the store (records, slices, variants, index).
func TestInvalidationRemovesVariantsAndSlices(t *testing.T) {
	big := bigBody(300 << 10)
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" {
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		if r.URL.Path == "/big" {
			_, _ = w.Write(big)
			return
		}
		varyOrigin("Accept-Encoding")(w, r)
	}, nil)
	p.gets("/big")
	p.gets("/var", "Accept-Encoding", "gzip")
	p.gets("/var", "Accept-Encoding", "br")
	if p.store.Len() == 0 {
		t.Fatal("nothing stored")
	}
	p.do("DELETE", "/big")
	p.do("POST", "/var")
	if n := p.store.Len(); n != 0 {
		t.Fatalf("store holds %d entries after invalidation", n)
	}
}

func TestSameOrigin(t *testing.T) {
	base, _ := url.Parse("http://Example.com/a/b")
	for ref, want := range map[string]bool{
		"/x": true, "x": true, "http://example.com:80/x": true, "HTTP://EXAMPLE.COM/x": true,
		"http://example.com:8080/x": false, "https://example.com/x": false, "//evil.example/x": false,
	} {
		u, err := base.Parse(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := sameOrigin(base, u); got != want {
			t.Errorf("%s: %v, want %v", ref, got, want)
		}
	}
}

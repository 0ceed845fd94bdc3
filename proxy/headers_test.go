package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHopByHopAndForwarded(t *testing.T) {
	var got http.Header
	var gotHost string
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		got, gotHost = r.Header.Clone(), r.Host
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Connection", "X-Secret")
		w.Header().Set("X-Secret", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Proxy-Authenticate", "Basic")
		w.Header().Set("Upgrade", "h2c")
		w.Header().Set("Alt-Svc", `h3=":443"`)
		w.Header().Set("Age", "3")
		w.Header().Set("X-End", "kept")
		_, _ = w.Write([]byte("ok"))
	}, nil)
	r := p.get("/hop", "Connection", "X-Client-Hop", "X-Client-Hop", "1", "Proxy-Authorization", "x",
		"TE", "trailers", "X-Forwarded-For", "10.0.0.1", "X-Keep", "yes", "Host", "example.com:8080")
	for _, h := range []string{"X-Client-Hop", "Proxy-Authorization", "Te"} {
		if v := got.Get(h); v != "" {
			t.Errorf("origin got hop-by-hop %s: %q", h, v)
		}
	}
	if got.Get("X-Keep") != "yes" {
		t.Errorf("end-to-end request header lost")
	}
	if v := got.Get("X-Forwarded-For"); !strings.HasPrefix(v, "10.0.0.1, ") {
		t.Errorf("X-Forwarded-For = %q", v)
	}
	if got.Get("X-Forwarded-Proto") != "http" || got.Get("X-Forwarded-Host") != "example.com:8080" {
		t.Errorf("X-Forwarded-Proto/Host = %q %q", got.Get("X-Forwarded-Proto"), got.Get("X-Forwarded-Host"))
	}
	if got.Get("Via") != "1.1 strata" || gotHost != "example.com:8080" {
		t.Errorf("Via %q, Host %q", got.Get("Via"), gotHost)
	}
	p.clock.Advance(2 * time.Second)
	for i, r := range []interface {
		Peek(string) []byte
	}{&r.Header, &p.get("/hop", "Host", "example.com:8080").Header} {
		for _, h := range []string{"X-Secret", "Keep-Alive", "Proxy-Authenticate", "Upgrade"} {
			if v := r.Peek(h); len(v) != 0 {
				t.Errorf("response %d carries hop-by-hop %s: %q", i, h, v)
			}
		}
		if string(r.Peek("X-End")) != "kept" {
			t.Errorf("response %d lost X-End", i)
		}
	}
	hit := p.get("/hop", "Host", "example.com:8080")
	expectHeader(t, hit, "Cache-Status", "strata; hit; detail=memory")
	expectHeader(t, hit, "Alt-Svc", "")
	expectHeader(t, hit, "Age", "5") // 3 from the origin + 2 in cache
}

func TestHostRouting(t *testing.T) {
	var hitsB, hostB = 0, ""
	p := newPair(t, cacheable("from A"), nil)
	b := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		hitsB++
		hostB = r.Host
		cacheable("from B")(w, r)
	}, nil)
	srv, err := New(NewMapStore(), Options{Origins: []OriginOptions{
		{URL: p.origin.URL, Default: true},
		{URL: b.origin.URL, Hosts: []string{"B.example"}, HostHeader: HostOrigin},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p.srv.router = srv.router // route p's proxy by the two-origin table
	defer srv.Close(t.Context())
	r := p.get("/r", "Host", "b.example:80")
	if string(r.Body()) != "from B" || hitsB != 1 {
		t.Fatalf("b.example: %q", r.Body())
	}
	if want := strings.TrimPrefix(b.origin.URL, "http://"); hostB != want {
		t.Errorf("HostOrigin: origin saw Host %q, want %q", hostB, want)
	}
	if r := p.get("/r", "Host", "other.example"); string(r.Body()) != "from A" {
		t.Fatalf("default: %q", r.Body())
	}
}

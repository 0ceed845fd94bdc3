package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestErrorStatuses(t *testing.T) {
	slow := make(chan struct{})
	defer close(slow)
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-slow:
			case <-time.After(5 * time.Second):
			}
		}
		_, _ = w.Write([]byte("x"))
	}, func(o *Options) {
		o.Origins[0].ResponseTimeout = 200 * time.Millisecond
		o.MaxHeaderBytes = 2048
	})
	if r := p.get("/slow"); r.StatusCode() != 504 {
		t.Errorf("origin timeout: %d, want 504", r.StatusCode())
	}
	for _, tc := range []struct{ name, req, want string }{
		{"CL+TE", "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "HTTP/1.1 400"},
		{"TE+CL", "GET / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", "HTTP/1.1 400"},
		{"CL twice", "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", "HTTP/1.1 400"},
		{"TE not chunked last", "POST / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", "HTTP/1.1 400"},
		{"space before colon", "GET / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding : chunked\r\n\r\n", "HTTP/1.1 400"},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "HTTP/1.1 400"},
		{"garbage", "GET\r\n\r\n", "HTTP/1.1 400"},
		{"header too large", "GET / HTTP/1.1\r\nHost: example.com\r\nX-Big: " + strings.Repeat("a", 4096) + "\r\n\r\n", "HTTP/1.1 431"},
	} {
		out, _ := p.raw(tc.req)
		if !strings.HasPrefix(out, tc.want) {
			t.Errorf("%s: got %.60q, want %s", tc.name, out, tc.want)
		}
	}
	if n := p.store.Len(); n != 0 {
		t.Errorf("errors stored: %d entries", n)
	}
}

func TestOriginUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := newPair(t, cacheable("x"), func(o *Options) { o.Origins[0].URL = "http://" + addr })
	r := p.get("/down")
	if r.StatusCode() != 502 {
		t.Fatalf("unreachable origin: %d, want 502", r.StatusCode())
	}
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; detail=error")
	if r := p.get("/down", "Cache-Control", "no-store"); r.StatusCode() != 502 {
		t.Fatalf("unreachable origin, bypass: %d, want 502", r.StatusCode())
	}
}

// TestIdleConnectionClosedSilently: a connection that sends no request
// within ReadTimeout is closed without a response (it used to get a 400
// that clients read as an unsolicited response on an idle connection).
func TestIdleConnectionClosedSilently(t *testing.T) {
	p := newPair(t, cacheable("x"), func(o *Options) { o.ReadTimeout = 50 * time.Millisecond })
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if len(b) != 0 {
		t.Fatalf("idle connection got %q (err %v), want it closed silently", b, err)
	}
}

package proxy

import (
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawOrigin serves resp, verbatim, to every request on a loopback
// listener and counts the requests.
func rawOrigin(t *testing.T, resp string) (url string, requests *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	requests = new(atomic.Int64)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 4096)
			if n, _ := c.Read(buf); n > 0 {
				requests.Add(1)
				_, _ = io.WriteString(c, resp)
			}
			c.Close() // one response per connection: a close-delimited body ends here
		}
	}()
	return "http://" + ln.Addr().String(), requests
}

// TestOriginFraming: a response whose framing strata cannot read (a
// Transfer-Encoding other than a lone chunked, RFC 9112 §6.1, §6.3) is
// answered 502 without a retry and never stored; a chunked response that
// also carries Content-Length is read as chunked (§6.3 rule 3) and sent
// on with strata's own framing, never both fields.
func TestOriginFraming(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\n"
	tests := []struct {
		name   string
		resp   string
		status int
		body   string
	}{
		{"unknown coding", head + "Transfer-Encoding: abc\r\n\r\nhello", 502, ErrOriginFraming.Error() + "\n"},
		{"chunked not last", head + "Transfer-Encoding: chunked, gzip\r\n\r\nhello", 502, ErrOriginFraming.Error() + "\n"},
		{"coding before chunked", head + "Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 502, ErrOriginFraming.Error() + "\n"},
		{"two lines", head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 502, ErrOriginFraming.Error() + "\n"},
		{"chunked and Content-Length", head + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 200, "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, requests := rawOrigin(t, tt.resp)
			p := newPair(t, cacheable("unused"), func(o *Options) { o.Origins[0].URL = u })
			for i := range 2 {
				r := p.get("/f")
				if r.StatusCode() != tt.status || string(r.Body()) != tt.body {
					t.Fatalf("request %d: %d %q, want %d %q", i, r.StatusCode(), r.Body(), tt.status, tt.body)
				}
				waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			}
			want := int64(2) // refused: no retry, nothing stored
			if tt.status == 200 {
				want = 1 // stored once
			}
			if n := requests.Load(); n != want {
				t.Errorf("origin saw %d requests, want %d", n, want)
			}
			raw, err := p.raw("GET /f HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
			if err != nil {
				t.Fatal(err)
			}
			hdr, _, _ := strings.Cut(raw, "\r\n\r\n")
			lower := strings.ToLower(hdr)
			if strings.Contains(lower, "transfer-encoding") && strings.Contains(lower, "content-length") {
				t.Errorf("both framing fields sent to the client:\n%s", hdr)
			}
		})
	}
}

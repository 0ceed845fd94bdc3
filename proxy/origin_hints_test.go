package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// rawAnswerOrigin answers every request on a connection with answer, keeping
// the connection open unless answer closes it; it counts connections.
func rawAnswerOrigin(t *testing.T, answer string) (addr string, conns func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := make(chan net.Conn, 1000)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n <- c
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := readRequestHead(br); err != nil {
						return
					}
					if _, err := io.WriteString(c, answer); err != nil || strings.Contains(answer, "Connection: close") {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(n) > 0 { // unblock the handlers; the test is over
			(<-n).Close()
		}
		wg.Wait()
	})
	return ln.Addr().String(), func() int { return len(n) }
}

// readRequestHead reads a request's header block (the tests send no body).
func readRequestHead(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		if l == "\r\n" {
			return b.String(), nil
		}
		b.WriteString(l)
	}
}

// originExchange makes one exchange with o's client, through hintTransport
// with a sink when hints, and returns the response header and body.
func originExchange(t *testing.T, o *origin, hints bool, method string) (string, string) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + string(o.addr) + "/x")
	req.Header.SetMethod(method)
	if hints {
		req.SetUserValue(hintsKey{}, &hintSink{})
	}
	if err := o.client.Do(req, resp); err != nil {
		t.Fatalf("hints=%v: %v", hints, err)
	}
	var body []byte
	if s := resp.BodyStream(); s != nil {
		var err error
		if body, err = io.ReadAll(s); err != nil {
			t.Fatalf("hints=%v: body: %v", hints, err)
		}
		_ = resp.CloseBodyStream()
	}
	return resp.Header.String(), string(body)
}

// TestHintTransportSameAsDefault: for each framing, the header, body and
// connection reuse an exchange through hintTransport gives are fasthttp's
// default transport's, interim responses (103 among others) included.
func TestHintTransportSameAsDefault(t *testing.T) {
	const interim = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
	for _, tc := range []struct {
		name, answer, method string
		reused               bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello", "GET", true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "GET", true},
		{"interim", interim + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "GET", true},
		{"status below 100", "HTTP/1.1 099 Odd\r\nContent-Length: 5\r\n\r\nhello", "GET", true},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", "GET", true},
		{"not modified", "HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\n\r\n", "GET", true},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD", true},
		{"close delimited", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello", "GET", false},
		{"connection close", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", "GET", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][2]string
			for i, hints := range []bool{false, true} {
				addr, conns := rawAnswerOrigin(t, tc.answer)
				o, err := newOrigin(OriginOptions{URL: "http://" + addr, ResponseTimeout: 5 * time.Second,
					ConnectTimeout: time.Second, MaxConns: 4, MaxHeaderBytes: 8 << 10, IdleTimeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				for range 3 {
					got[i][0], got[i][1] = originExchange(t, o, hints, tc.method)
				}
				if want := map[bool]int{true: 1, false: 3}[tc.reused]; conns() != want {
					t.Errorf("hints=%v: %d connections for 3 exchanges, want %d", hints, conns(), want)
				}
			}
			if got[0] != got[1] {
				t.Errorf("default transport:\n%q\nhint transport:\n%q", got[0], got[1])
			}
		})
	}
}

// TestHintTransportCloseEarly: a body closed before its end (or with an
// error) closes the connection instead of pooling it, also when the close
// comes while a Read waits for the origin.
func TestHintTransportCloseEarly(t *testing.T) {
	addr, conns := rawAnswerOrigin(t, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello") // 5 bytes missing: a Read waits
	o, err := newOrigin(OriginOptions{URL: "http://" + addr, ResponseTimeout: 5 * time.Second, ConnectTimeout: time.Second,
		MaxConns: 4, MaxHeaderBytes: 8 << 10, IdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + addr + "/x")
		req.SetUserValue(hintsKey{}, &hintSink{})
		if err := o.client.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		body := resp.BodyStream()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(body, buf); err != nil || !bytes.Equal(buf, []byte("hello")) {
			t.Fatalf("%q %v", buf, err)
		}
		done := make(chan error, 1)
		go func() { _, err := body.Read(buf); done <- err }()
		closeBody(body, io.ErrUnexpectedEOF) // unblocks the Read
		if err := <-done; err == nil {
			t.Error("a Read blocked on the origin returned no error when the body was closed")
		}
		if _, err := body.Read(buf); err == nil {
			t.Error("Read after close returned no error")
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	if n := conns(); n != 2 {
		t.Errorf("%d connections for 2 exchanges cut short, want 2 (none pooled)", n)
	}
}

// FuzzEarlyHints: whatever 103 header block the origin sends, the 103
// written to the client parses back as a 103 whose Link fields are the
// origin's that carry no control characters, and nothing else.
func FuzzEarlyHints(f *testing.F) {
	f.Add("Link: </a.css>; rel=preload\r\nLink: <https://x>; rel=preconnect\r\nX-Other: 1\r\n")
	f.Add("Link: \r\nlink: </b>\r\n")
	f.Add("Link: </a>\x01\r\n")
	f.Fuzz(func(t *testing.T, fields string) {
		var in fasthttp.ResponseHeader
		if in.Read(bufio.NewReader(strings.NewReader("HTTP/1.1 103 Early Hints\r\n"+fields+"\r\n"))) != nil {
			return
		}
		var want []string
		for _, v := range in.PeekAll(fasthttp.HeaderLink) {
			if len(v) > 0 && fieldValueOK(v) {
				want = append(want, string(v))
			}
		}
		out, n := appendEarlyHints(nil, &in)
		if n != len(want) {
			t.Fatalf("%d Link fields written, want %d", n, len(want))
		}
		var back fasthttp.ResponseHeader
		if err := back.Read(bufio.NewReader(bytes.NewReader(out))); err != nil {
			t.Fatalf("%q does not parse: %v", out, err)
		}
		if back.StatusCode() != fasthttp.StatusEarlyHints || len(back.PeekAll(fasthttp.HeaderLink)) != n {
			t.Fatalf("%q: status %d, want 103 with %d Link fields", out, back.StatusCode(), n)
		}
		for k := range back.All() {
			if string(k) != fasthttp.HeaderLink && string(k) != fasthttp.HeaderContentType { // fasthttp reports a default Content-Type
				t.Fatalf("%q: field %q, want Link only", out, k)
			}
		}
		for i, v := range back.PeekAll(fasthttp.HeaderLink) {
			if string(v) != strings.TrimSpace(want[i]) {
				t.Fatalf("Link %d: %q, want %q", i, v, want[i])
			}
		}
	})
}

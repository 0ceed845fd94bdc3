package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInterimNotStored: an origin's 103 Early Hints (and any 1xx) before
// its final response is consumed on the way in: the final response is
// served and stored, never the interim one or its fields.
func TestInterimNotStored(t *testing.T) {
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusProcessing)
		w.Header().Del("Link")
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write([]byte("final"))
	}, nil)
	for i := range 2 {
		r := p.get("/eh")
		if r.StatusCode() != 200 || string(r.Body()) != "final" {
			t.Fatalf("request %d: %d %q", i, r.StatusCode(), r.Body())
		}
		expectHeader(t, r, "Link", "")
		waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	}
	if n := p.hits.Load(); n != 1 {
		t.Errorf("origin saw %d requests, want 1 (the final 200 stored)", n)
	}
}

// TestExpectContinue: a client that sends Expect: 100-continue with a body
// gets 100 Continue before it sends the body, then the origin's answer.
func TestExpectContinue(t *testing.T) {
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append([]byte("got "), b...))
	}, nil)
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	_, _ = io.WriteString(c, "POST /up HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("first line %q (%v), want 100 Continue before the body", line, err)
	}
	if blank, _ := br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("100 Continue not followed by an empty line: %q", blank)
	}
	_, _ = io.WriteString(c, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "got hello" {
		t.Fatalf("final %d %q", resp.StatusCode, b)
	}
}

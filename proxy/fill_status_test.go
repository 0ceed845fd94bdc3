package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// stream is a raw client connection whose response headers were read and
// whose body is still arriving.
type stream struct {
	c    net.Conn
	r    *bufio.Reader
	head string
}

// openStream sends GET path (Connection: close) and reads the response
// header block.
func (p *pair) openStream(path string) *stream {
	p.t.Helper()
	c, err := p.ln.Dial()
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"); err != nil {
		p.t.Fatal(err)
	}
	s := &stream{c: c, r: bufio.NewReader(c)}
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			p.t.Fatalf("reading headers: %v (so far %q)", err, s.head)
		}
		if line == "\r\n" {
			return s
		}
		s.head += line
	}
}

// readX reads body bytes until n 'x' have come (chunk framing has none),
// or to the end when n < 0, and returns how many came.
func (s *stream) readX(n int) int {
	got := 0
	buf := make([]byte, 4096)
	for n < 0 || got < n {
		k, err := s.r.Read(buf)
		got += bytes.Count(buf[:k], []byte("x"))
		if err != nil {
			break
		}
	}
	return got
}

// TestFillStatusStored: "; stored" is in Cache-Status only while the fill
// still stores the body. The leader's headers go out while it does; a
// request that joins after the body outgrew MaxObjectSize is told
// "collapsed" without "stored"; nothing is stored.
func TestFillStatusStored(t *testing.T) {
	more, end := newGate(), newGate()
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60") // no length: chunked
		for _, g := range []*gate{more, end} {
			_, _ = w.Write([]byte(strings.Repeat("x", 1000)))
			w.(http.Flusher).Flush()
			g.wait()
		}
	}, func(o *Options) { o.MaxObjectSize = 1500 })
	t.Cleanup(func() { more.open(); end.open() })
	a := p.openStream("/c")
	if !strings.Contains(a.head, "Cache-Status: strata; fwd=uri-miss; stored\r\n") {
		t.Errorf("leader, storing:\n%s", a.head)
	}
	more.open()
	a.readX(2000) // the fill has 2000 bytes: over MaxObjectSize, no longer storing
	b := p.openStream("/c")
	if !strings.Contains(b.head, "Cache-Status: strata; fwd=uri-miss; collapsed\r\n") {
		t.Errorf("joined after the fill stopped storing:\n%s", b.head)
	}
	end.open()
	if n := a.readX(-1); n != 0 {
		t.Errorf("leader got %d bytes more, want 0", n)
	}
	if n := b.readX(-1); n != 2000 {
		t.Errorf("collapsed request got %d bytes, want 2000", n)
	}
	p.settle()
	if n := p.store.Len(); n != 0 {
		t.Errorf("stored %d entries", n)
	}
}

// TestFillStatus: the status rule on its own, and a shared fill that has
// failed already is reported failed to a request that has not answered.
func TestFillStatus(t *testing.T) {
	for _, tc := range []struct {
		cs      cacheStatus
		leader  bool
		storing bool
		want    cacheStatus
	}{
		{csURIMiss, true, true, csURIMissStored},
		{csURIMiss, true, false, csURIMiss},
		{csMiss, true, true, csMissStored},
		{csStale, true, false, csStale},
		{csRequest, true, true, csRequestStored},
		{csURIMiss, false, true, csCollapsed},
		{csStale, false, false, csCollapsedUnstored},
	} {
		f := &fill{storing: tc.storing}
		if got := f.status(tc.cs, tc.leader); got != tc.want {
			t.Errorf("status(%s, leader %v, storing %v) = %s, want %s",
				cacheStatusText[tc.cs], tc.leader, tc.storing, cacheStatusText[got], cacheStatusText[tc.want])
		}
	}
	f := &fill{state: fillShared, err: ErrTruncated}
	f.cond.L = &f.mu
	if state, resp, err := f.waitHeaders(true); state != fillFailed || resp != nil || err != ErrTruncated {
		t.Errorf("failed shared fill: state %d, resp %v, err %v; want failed, nil, ErrTruncated", state, resp, err)
	}
}

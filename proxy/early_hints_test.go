package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp/fasthttputil"
)

const testLink = "</style.css>; rel=preload; as=style"

// hintPair is a pair whose origin answers /eh with a 103 (Link), then
// waits for release before its cacheable final 200; other paths answer a
// plain cacheable 200. Clients dial raw connections through the Server's
// Listener (dial) or, unwrapped, through p.ln.
type hintPair struct {
	*pair
	wrapped *fasthttputil.InmemoryListener
	release chan struct{}
}

func newHintPair(t *testing.T, mod func(*Options)) *hintPair {
	hp := &hintPair{release: make(chan struct{}, 16)}
	hp.pair = newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		if strings.HasPrefix(r.URL.Path, "/eh") {
			w.Header().Add("Link", testLink)
			w.Header().Add("Link", "<https://fonts.example>; rel=preconnect")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			select {
			case <-hp.release:
			case <-time.After(10 * time.Second):
			}
		}
		_, _ = io.WriteString(w, "final "+r.URL.Path)
	}, func(o *Options) {
		o.EarlyHints = true
		if mod != nil {
			mod(o)
		}
	})
	hp.wrapped = fasthttputil.NewInmemoryListener()
	hp.serveWG.Add(1)
	go func() { defer hp.serveWG.Done(); _ = hp.http.Serve(hp.srv.Listener(hp.wrapped)) }()
	t.Cleanup(func() { _ = hp.wrapped.Close() })
	return hp
}

// dial opens a client connection, through the Server's Listener when
// wrapped.
func (hp *hintPair) dial(wrapped bool) (net.Conn, *bufio.Reader) {
	hp.t.Helper()
	ln := hp.ln
	if wrapped {
		ln = hp.wrapped
	}
	c, err := ln.Dial()
	if err != nil {
		hp.t.Fatal(err)
	}
	hp.t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// readHints reads a 103 block from br and returns its Link values.
func readHints(t *testing.T, br *bufio.Reader) []string {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 103 Early Hints\r\n" {
		t.Fatalf("first line %q (%v), want a 103 before the final response", line, err)
	}
	var links []string
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "\r\n" {
			return links
		}
		k, v, _ := strings.Cut(strings.TrimSuffix(l, "\r\n"), ": ")
		if k != "Link" {
			t.Fatalf("103 carries %q, want Link fields only", l)
		}
		links = append(links, v)
	}
}

// readFinal reads a final response from br: status, Link header, body.
func readFinal(t *testing.T, br *bufio.Reader) (int, string, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Link"), string(b)
}

// TestEarlyHintsForwarded: the client leading a fill gets the origin's 103
// (its Link fields) while the origin still works on the final response
// (the origin waits until the client has read the 103); the final
// response carries no Link, and the hit that follows gets no 103: the 103
// is not stored.
func TestEarlyHintsForwarded(t *testing.T) {
	hp := newHintPair(t, nil)
	c, br := hp.dial(true)
	_, _ = io.WriteString(c, "GET /eh HTTP/1.1\r\nHost: example.com\r\n\r\n")
	links := readHints(t, br)
	if len(links) != 2 || links[0] != testLink {
		t.Fatalf("103 Link fields %q, want the origin's two", links)
	}
	hp.release <- struct{}{}
	if code, link, body := readFinal(t, br); code != 200 || link != "" || body != "final /eh" {
		t.Fatalf("final %d Link %q body %q", code, link, body)
	}
	waitFor(t, func() bool { return hp.srv.nfills.Load() == 0 })

	// A second request on the same (kept-alive, not pipelined) connection
	// is a hit: a plain 200, no 103.
	_, _ = io.WriteString(c, "GET /eh HTTP/1.1\r\nHost: example.com\r\n\r\n")
	line, _ := br.Peek(len("HTTP/1.1 200"))
	if string(line) != "HTTP/1.1 200" {
		t.Fatalf("hit begins %q, want a 200 and no 103", line)
	}
	if code, _, body := readFinal(t, br); code != 200 || body != "final /eh" {
		t.Fatalf("hit %d %q", code, body)
	}
	if n := hp.hits.Load(); n != 1 {
		t.Errorf("origin saw %d requests, want 1", n)
	}
	if n := testutil.ToFloat64(hp.srv.m.earlyHints); n != 1 {
		t.Errorf("strata_early_hints_total = %v, want 1", n)
	}
}

// TestEarlyHintsKeepAlive: a later request on a kept-alive connection that
// the client did not pipeline gets its 103 too.
func TestEarlyHintsKeepAlive(t *testing.T) {
	hp := newHintPair(t, nil)
	c, br := hp.dial(true)
	hp.secondGetsHints(c, br, "/eh2")
}

// secondGetsHints sends /plain on c, then path, which must get its 103
// before its final response.
func (hp *hintPair) secondGetsHints(c io.Writer, br *bufio.Reader, path string) {
	t := hp.t
	t.Helper()
	_, _ = io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if code, _, _ := readFinal(t, br); code != 200 {
		t.Fatalf("first request %d", code)
	}
	_, _ = io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if links := readHints(t, br); len(links) != 2 {
		t.Fatalf("103 Link fields %q", links)
	}
	hp.release <- struct{}{}
	if code, _, body := readFinal(t, br); code != 200 || body != "final "+path {
		t.Fatalf("final %d %q", code, body)
	}
}

// TestEarlyHintsWithheld: no 103 reaches an HTTP/1.0 client, a client
// whose request was pipelined behind another (its 103 could overtake the
// response held in fasthttp's write buffer), a connection not accepted
// through Listener, or any client when forwarding is off; each still gets
// its final response.
func TestEarlyHintsWithheld(t *testing.T) {
	const get = "GET /eh HTTP/1.1\r\nHost: example.com\r\n\r\n"
	for _, tc := range []struct {
		name    string
		off     bool
		wrapped bool
		send    string
		finals  int
	}{
		{name: "http10", wrapped: true, send: "GET /eh HTTP/1.0\r\nHost: example.com\r\n\r\n", finals: 1},
		{name: "pipelined", wrapped: true, send: "GET /plain HTTP/1.1\r\nHost: example.com\r\n\r\n" + get, finals: 2},
		{name: "unwrapped", send: get, finals: 1},
		{name: "disabled", off: true, wrapped: true, send: get, finals: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hp := newHintPair(t, func(o *Options) { o.EarlyHints = !tc.off })
			hp.release <- struct{}{} // the origin answers at once
			c, br := hp.dial(tc.wrapped)
			_, _ = io.WriteString(c, tc.send)
			for i := range tc.finals {
				if b, _ := br.Peek(len("HTTP/1.1 1")); string(b) == "HTTP/1.1 1" {
					t.Fatalf("response %d: a 1xx reached the client", i)
				}
				if code, link, _ := readFinal(t, br); code != 200 || link != "" {
					t.Fatalf("response %d: %d Link %q", i, code, link)
				}
			}
			if n := testutil.ToFloat64(hp.srv.m.earlyHints); n != 0 {
				t.Errorf("strata_early_hints_total = %v, want 0", n)
			}
		})
	}
}

// TestEarlyHintsTLS: over TLS (Listener under tls.NewListener) a
// kept-alive connection's later request gets its 103 too.
func TestEarlyHintsTLS(t *testing.T) {
	hp := newHintPair(t, nil)
	certSrv := httptest.NewTLSServer(http.NotFoundHandler()) // for its certificate
	cert := certSrv.TLS.Certificates
	certSrv.Close()
	ln := fasthttputil.NewInmemoryListener()
	hp.serveWG.Add(1)
	go func() {
		defer hp.serveWG.Done()
		_ = hp.http.Serve(tls.NewListener(hp.srv.Listener(ln), &tls.Config{Certificates: cert}))
	}()
	t.Cleanup(func() { _ = ln.Close() })
	raw, err := ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true}) // #nosec G402 -- a test certificate
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	hp.secondGetsHints(c, bufio.NewReader(c), "/eh-tls")
}

// TestEarlyHintsLeaderOnly: a request that joins the fill after its 103
// (collapsed) gets the final response and no 103.
func TestEarlyHintsLeaderOnly(t *testing.T) {
	hp := newHintPair(t, nil)
	lc, lbr := hp.dial(true)
	_, _ = io.WriteString(lc, "GET /eh HTTP/1.1\r\nHost: example.com\r\n\r\n")
	readHints(t, lbr)
	fc, fbr := hp.dial(true)
	_, _ = io.WriteString(fc, "GET /eh HTTP/1.1\r\nHost: example.com\r\n\r\n")
	waitFor(t, func() bool { return hp.fillRefs() == 3 }) // the leader, the fill, the follower
	hp.release <- struct{}{}
	for i, br := range []*bufio.Reader{lbr, fbr} {
		if b, _ := br.Peek(len("HTTP/1.1 1")); string(b) == "HTTP/1.1 1" {
			t.Fatalf("client %d: another 1xx", i)
		}
		if code, _, body := readFinal(t, br); code != 200 || body != "final /eh" {
			t.Fatalf("client %d: %d %q", i, code, body)
		}
	}
	if n := hp.hits.Load(); n != 1 {
		t.Errorf("origin saw %d requests, want 1", n)
	}
}

// fillRefs returns the references held on the one running fill (0: none).
func (hp *hintPair) fillRefs() int {
	for i := range hp.srv.fills.shards {
		sh := &hp.srv.fills.shards[i]
		sh.mu.Lock()
		for _, f := range sh.m {
			f.mu.Lock()
			n := f.refs
			f.mu.Unlock()
			sh.mu.Unlock()
			return n
		}
		sh.mu.Unlock()
	}
	return 0
}

// pipeListener accepts the server ends of net.Pipe connections: a write
// blocks until the client reads it, as on a connection whose client has
// stopped reading and whose socket buffers are full.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// TestEarlyHintsClientNotReading: a 103 the leader's client does not read
// holds the fill's origin exchange for a short while only (not the
// client's WriteTimeout, nor, over TLS, the 5 s crypto/tls gives a
// close_notify): a collapsed follower gets its response.
func TestEarlyHintsClientNotReading(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[overTLS], func(t *testing.T) {
			hp := newHintPair(t, nil)
			hp.release <- struct{}{} // the origin answers after its 103
			pl := newPipeListener()
			var ln net.Listener = hp.srv.Listener(pl)
			if overTLS {
				// No session tickets: nothing left for the client to read
				// after the handshake.
				ln = tls.NewListener(ln, &tls.Config{Certificates: testCert(t), SessionTicketsDisabled: true})
			}
			hp.serveWG.Add(1)
			go func() { defer hp.serveWG.Done(); _ = hp.http.Serve(ln) }()
			t.Cleanup(func() { _ = pl.Close() })
			var lc net.Conn = pl.dial()
			t.Cleanup(func() { _ = lc.Close() })
			var err error
			if overTLS {
				tc := tls.Client(lc, &tls.Config{InsecureSkipVerify: true}) // #nosec G402 -- a test certificate
				if err = tc.Handshake(); err != nil {
					t.Fatal(err)
				}
				lc = tc
			}
			_, _ = io.WriteString(lc, "GET /eh HTTP/1.1\r\nHost: example.com\r\n\r\n") // and never read
			waitFor(t, func() bool { return hp.srv.nfills.Load() == 1 })

			// The follower comes by the same scheme (the cache key's) and
			// reads.
			fpl := fasthttputil.NewInmemoryListener()
			t.Cleanup(func() { _ = fpl.Close() })
			var fln net.Listener = fpl
			if overTLS {
				fln = tls.NewListener(fln, &tls.Config{Certificates: testCert(t)})
			}
			hp.serveWG.Add(1)
			go func() { defer hp.serveWG.Done(); _ = hp.http.Serve(fln) }()
			var fc net.Conn
			if fc, err = fpl.Dial(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = fc.Close() })
			if overTLS {
				fc = tls.Client(fc, &tls.Config{InsecureSkipVerify: true}) // #nosec G402 -- a test certificate
			}
			_ = fc.SetDeadline(time.Now().Add(4 * time.Second))
			_, _ = io.WriteString(fc, "GET /eh HTTP/1.1\r\nHost: example.com\r\n\r\n")
			if code, _, body := readFinal(t, bufio.NewReader(fc)); code != 200 || body != "final /eh" {
				t.Fatalf("follower: %d %q", code, body)
			}
			if n := hp.hits.Load(); n != 1 {
				t.Errorf("origin saw %d requests, want 1 (the follower collapsed)", n)
			}
		})
	}
}

// testCert returns a self-signed certificate for 127.0.0.1.
func testCert(t *testing.T) []tls.Certificate {
	t.Helper()
	certSrv := httptest.NewTLSServer(http.NotFoundHandler()) // for its certificate
	defer certSrv.Close()
	return certSrv.TLS.Certificates
}

// TestListenerHintsOff: with forwarding off, Listener hands fasthttp the
// connections as accepted: a *net.TCPConn, which fasthttp writes a hit's
// header and lent body to in one writev (BenchmarkHitTCP).
func TestListenerHintsOff(t *testing.T) {
	for _, off := range []bool{false, true} {
		s := &Server{opts: Options{EarlyHints: !off}}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dialed := make(chan net.Conn, 1)
		go func() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
			}
			dialed <- c
		}()
		c, err := s.Listener(ln).Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, tcp := c.(*net.TCPConn); tcp != off {
			t.Errorf("hints off=%v: accepted a %T", off, c)
		}
		c.Close()
		if dc := <-dialed; dc != nil {
			dc.Close()
		}
		ln.Close()
	}
}

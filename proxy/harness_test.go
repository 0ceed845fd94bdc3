package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// testClock is an injectable clock.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	return c
}
func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// pair is an origin (net/http on 127.0.0.1:0) and a proxy (fasthttp on
// an in-memory listener) with a client.
type pair struct {
	t       *testing.T
	origin  *httptest.Server
	hits    atomic.Int64 // origin requests
	store   *mapStore
	srv     *Server
	http    *fasthttp.Server
	ln      *fasthttputil.InmemoryListener
	client  *fasthttp.Client
	clock   *testClock
	reg     *prometheus.Registry
	serveWG sync.WaitGroup
}

func newPair(t *testing.T, h http.HandlerFunc, mod func(*Options)) *pair {
	t.Helper()
	p := &pair{t: t, store: newMapStore(), clock: newTestClock(), reg: prometheus.NewRegistry()}
	p.origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		h(w, r)
	}))
	opts := Options{
		Origins:    []OriginOptions{{URL: p.origin.URL, ResponseTimeout: 5 * time.Second}},
		SliceSize:  64 << 10,
		Now:        p.clock.Now,
		Registerer: p.reg,
	}
	if mod != nil {
		mod(&opts)
	}
	srv, err := New(p.store, opts)
	if err != nil {
		t.Fatal(err)
	}
	p.srv = srv
	p.http = srv.HTTPServer()
	p.ln = fasthttputil.NewInmemoryListener()
	p.serveWG.Add(1)
	go func() { defer p.serveWG.Done(); _ = p.http.Serve(p.ln) }()
	p.client = &fasthttp.Client{
		Dial:               func(string) (net.Conn, error) { return p.ln.Dial() },
		StreamResponseBody: false,
		ReadTimeout:        20 * time.Second,
	}
	t.Cleanup(p.close)
	return p
}

func (p *pair) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.client.CloseIdleConnections()
	_ = p.http.ShutdownWithContext(ctx)
	_ = p.ln.Close() // Serve may not have registered the listener yet
	p.serveWG.Wait()
	if err := p.srv.Close(ctx); err != nil {
		p.t.Errorf("Close: %v", err)
	}
	p.origin.CloseClientConnections()
	p.origin.Close()
}

// get sends method url (path on host "example.com" unless url has a host)
// with headers kv... and returns the response (caller releases).
func (p *pair) do(method, path string, kv ...string) *fasthttp.Response {
	p.t.Helper()
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://example.com" + path)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "Host" {
			req.Header.SetHost(kv[i+1])
			req.UseHostHeader = true
			continue
		}
		req.Header.Add(kv[i], kv[i+1])
	}
	resp := fasthttp.AcquireResponse()
	if err := p.client.Do(req, resp); err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

func (p *pair) get(path string, kv ...string) *fasthttp.Response { return p.do("GET", path, kv...) }

// raw writes a raw request on a fresh connection and returns everything
// read until the proxy closes the connection (or 10 s pass).
func (p *pair) raw(req string) (string, error) {
	c, err := p.ln.Dial()
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	b, err := io.ReadAll(bufio.NewReader(c))
	return string(b), err
}

func expectHeader(t *testing.T, r *fasthttp.Response, name, want string) {
	t.Helper()
	if got := string(r.Header.Peek(name)); got != want {
		t.Errorf("%s = %q, want %q", name, got, want)
	}
}

func cacheable(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, body)
	}
}

// bigBody returns n deterministic bytes.
func bigBody(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	return b
}

var _ = strings.Contains

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 64<<10) }

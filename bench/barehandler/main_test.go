package main

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp's process-wide Date refresher, started once, never stopped.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// Client and HostClient idle-connection reapers and the Server's
		// worker-pool cleaner: each exits on its own after its sleep.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

// serveOn runs h on an in-memory listener and returns a client for it;
// cleanup shuts the server down and waits for it.
func serveOn(t *testing.T, h fasthttp.RequestHandler) *fasthttp.Client {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: h}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	t.Cleanup(func() {
		c.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.ShutdownWithContext(ctx); err != nil {
			t.Error(err)
		}
		<-done
	})
	return c
}

func get(t *testing.T, c *fasthttp.Client, uri string) (int, []byte, *fasthttp.ResponseHeader) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(uri)
	if err := c.Do(req, resp); err != nil {
		t.Fatalf("GET %s: %v", uri, err)
	}
	var h fasthttp.ResponseHeader
	resp.Header.CopyTo(&h)
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), &h
}

func TestServe(t *testing.T) {
	c := serveOn(t, newBodies(maxBody).serve)
	for _, tc := range []struct {
		path   string
		status int
		size   int
	}{
		{"/obj/1k?max-age=86400", 200, 1 << 10},
		{"/obj/256KiB?k=3", 200, 256 << 10},
		{"/obj/17", 200, 17},
		{"/obj/1GiB", 404, -1},
		{"/obj/x", 404, -1},
		{"/other", 404, -1},
	} {
		st, body, h := get(t, c, "http://bare"+tc.path)
		if st != tc.status || (tc.size >= 0 && len(body) != tc.size) {
			t.Errorf("%s: status %d, %d bytes; want %d, %d", tc.path, st, len(body), tc.status, tc.size)
		}
		if st == 200 && (len(h.Peek("ETag")) == 0 || string(h.Peek("Cache-Control")) != "public, max-age=86400") {
			t.Errorf("%s: headers %q", tc.path, h.Header())
		}
	}
	_, a, _ := get(t, c, "http://bare/obj/4k?k=1")
	_, b, _ := get(t, c, "http://bare/obj/4k?k=2")
	if !bytes.Equal(a, b) {
		t.Error("two URLs of one size got different bodies")
	}
}

func TestProxy(t *testing.T) {
	var hits atomic.Int64
	origin := serveOn(t, func(ctx *fasthttp.RequestCtx) {
		hits.Add(1)
		ctx.Response.Header.Set("X-Path", string(ctx.RequestURI()))
		ctx.SetBodyString("from origin")
	})
	p := newProxy("origin")
	p.c.Dial = func(string) (net.Conn, error) { return origin.Dial("origin") }
	c := serveOn(t, p.serve)
	for i := range 3 {
		st, body, h := get(t, c, "http://bare/obj/1k?u=x")
		if st != 200 || string(body) != "from origin" || string(h.Peek("X-Path")) != "/obj/1k?u=x" {
			t.Errorf("request %d: %d %q %q", i, st, body, h.Peek("X-Path"))
		}
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("origin saw %d requests; want 3 (nothing cached)", n)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1k": 1 << 10, "256KiB": 256 << 10, "64MiB": 64 << 20, "1g": 1 << 30, "12": 12} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "k", "-1", "1x", "9999999999999GiB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

func TestHandlerModes(t *testing.T) {
	for _, tc := range []struct{ mode, origin string }{{"proxy", ""}, {"proxy", "https://x"}, {"other", ""}} {
		if _, err := handler(tc.mode, tc.origin); err == nil {
			t.Errorf("handler(%q, %q) accepted", tc.mode, tc.origin)
		}
	}
}

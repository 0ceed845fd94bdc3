package proxy

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestLargeHitSwapsBody: hits with bodies from swapBodyMin up hand the
// stored bytes to the response (setBody); the buffers then circulate
// between requests and responses, and a body must never show another
// object's bytes. Two objects are served in turn, each response checked
// whole; then the allocations per hit must stay amortized (an array comes
// back a record header shorter each round).
func TestLargeHitSwapsBody(t *testing.T) {
	bodies := map[string]string{
		"/a": strings.Repeat("a", swapBodyMin+1000),
		"/b": strings.Repeat("b", 60<<10), // inline: under the harness's 64KiB slices
	}
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte(bodies[r.URL.Path]))
	}, nil)
	p.get("/a")
	p.get("/b")
	var ctx fasthttp.RequestCtx
	path, bad := "/a", 0
	serve := func() {
		path = map[string]string{"/a": "/b", "/b": "/a"}[path]
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetHost("example.com")
		ctx.Request.Header.SetRequestURI(path)
		p.srv.handler(&ctx)
		if !bytes.Equal(ctx.Response.Body(), []byte(bodies[path])) ||
			string(ctx.Response.Header.Peek("Cache-Status")) != "strata; hit; detail=memory" {
			bad++
		}
	}
	for range 500 {
		serve()
	}
	if bad > 0 {
		t.Fatalf("%d of 500 hits had a wrong body or were not memory hits", bad)
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(500, serve); n > 0.1 {
		t.Errorf("a large hit allocates %.2f times, want amortized <= 0.1", n)
	}
}

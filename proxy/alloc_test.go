package proxy

import (
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestHitAllocs: serving a small object from the memory tier allocates
// nothing beyond fasthttp's own (STYLE rule 12). Skipped under -race.
func TestHitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under -race")
	}
	p := newPair(t, cacheable("small body"), nil)
	p.get("/alloc")
	var ctx fasthttp.RequestCtx
	serve := func() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetHost("example.com")
		ctx.Request.Header.SetRequestURI("/alloc")
		p.srv.handler(&ctx)
	}
	serve()
	if got := string(ctx.Response.Header.Peek("Cache-Status")); got != "strata; hit; detail=memory" {
		t.Fatalf("not a hit: %q", got)
	}
	if n := testing.AllocsPerRun(200, serve); n != 0 {
		t.Fatalf("hit allocates %.1f times", n)
	}
}

var _ http.Handler

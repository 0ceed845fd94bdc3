package proxy

import (
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestRangeUnsatisfiedAfterLastRelease: a Range request past the end of
// a fill's body whose reference is the fill's last (the fill goroutine
// ended meanwhile) still answers with the fill's length: the length is
// read before the reference is dropped, not from a recycled fill.
func TestRangeUnsatisfiedAfterLastRelease(t *testing.T) {
	p := newPair(t, func(http.ResponseWriter, *http.Request) {}, nil)
	f := acquireFill(p.srv, []byte("key"))
	f.state, f.storing, f.declared, f.refs = fillShared, true, 100, 1 // the caller's is the last reference
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Range", "bytes=500-")
	p.srv.serveFillRanged(&ctx, nil, csCollapsed, f, false)
	if got := ctx.Response.StatusCode(); got != fasthttp.StatusRequestedRangeNotSatisfiable {
		t.Fatalf("status %d, want 416", got)
	}
	if got := string(ctx.Response.Header.Peek("Content-Range")); got != "bytes */100" {
		t.Fatalf("Content-Range %q, want %q", got, "bytes */100")
	}
}

package main

import (
	"bytes"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/pprofhandler"
)

// pprofPrefix is where -pprof mounts Go's profiles on the admin listener.
var pprofPrefix = []byte("/debug/pprof/")

// withPprof serves /debug/pprof/ (net/http/pprof's endpoints: profile,
// heap, goroutine, trace, ...) on the admin listener and everything else
// with next. It is opt-in (-pprof): a CPU profile costs a few percent
// while it runs and the endpoints reveal the binary's internals, so it is
// off unless the operator asks, and the admin listener should stay on
// loopback or a private network (as for /metrics).
func withPprof(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if bytes.HasPrefix(ctx.Path(), pprofPrefix) {
			pprofhandler.PprofHandler(ctx)
			return
		}
		next(ctx)
	}
}

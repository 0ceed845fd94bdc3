package main

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestAdminGate: while strata starts, the admin listener says 200 on
// /healthz and 503 on everything else, /readyz included; once opened, it
// hands every request to the admin handler.
func TestAdminGate(t *testing.T) {
	var g adminGate
	do := func(path string) (int, string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI(path)
		g.serve(&ctx)
		return ctx.Response.StatusCode(), string(ctx.Response.Body())
	}
	for _, tc := range []struct {
		path string
		want int
	}{{"/healthz", 200}, {"/readyz", 503}, {"/metrics", 503}, {"/purge", 503}} {
		if code, body := do(tc.path); code != tc.want {
			t.Errorf("starting: %s answered %d %q, want %d", tc.path, code, body, tc.want)
		}
	}
	g.open(func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(299) })
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _ := do(p); code != 299 {
			t.Errorf("open: %s answered %d, want the admin handler's 299", p, code)
		}
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestWithPprof(t *testing.T) {
	next := func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("next") }
	h := withPprof(next)
	for _, tc := range []struct {
		path, want string
	}{
		{"/metrics", "next"},
		{"/debug/pprof", "next"}, // not the prefix: left to the admin handler
		{"/debug/pprof/cmdline", "-test."},
		{"/debug/pprof/", "goroutine"},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI(tc.path)
		h(&ctx)
		if body := string(ctx.Response.Body()); !strings.Contains(body, tc.want) {
			t.Errorf("%s: body %.80q, want it to contain %q", tc.path, body, tc.want)
		}
	}
}

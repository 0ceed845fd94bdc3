package main

import (
	"time"

	"github.com/valyala/fasthttp"
)

// proxy passes each request to one origin with a plain fasthttp client,
// the way fasthttp's own reverse-proxy examples do: the client request is
// sent as it came (less hop-by-hop Connection), the origin's response,
// read whole, is the reply. No cache, no coalescing, no header rewriting:
// the least work a Go proxy can do for a miss.
type proxy struct {
	c *fasthttp.HostClient
}

func newProxy(hostPort string) *proxy {
	return &proxy{c: &fasthttp.HostClient{
		Addr:                hostPort,
		MaxConns:            512,
		ReadTimeout:         30 * time.Second,
		WriteTimeout:        30 * time.Second,
		MaxIdleConnDuration: time.Minute,
	}}
}

func (p *proxy) serve(ctx *fasthttp.RequestCtx) {
	req, resp := &ctx.Request, &ctx.Response
	req.Header.Del("Connection")
	if err := p.c.Do(req, resp); err != nil {
		ctx.ResetBody()
		ctx.Error("barehandler: origin: "+err.Error(), fasthttp.StatusBadGateway)
		return
	}
	resp.Header.Del("Connection")
}

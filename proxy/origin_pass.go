package proxy

import (
	"fmt"
	"io"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// pass forwards the request to o and streams the answer back, storing
// nothing: for requests that may not use the cache, for responses that
// may not be shared, and when too many fills run.
func (s *Server) pass(ctx *fasthttp.RequestCtx, o *origin, cs cacheStatus) {
	req := fasthttp.AcquireRequest()
	ctx.Request.CopyTo(req)
	s.prepareOriginRequest(req, ctx, o)
	resp := fasthttp.AcquireResponse()
	start := s.opts.Now()
	err := o.do(s.life, req, resp)
	fasthttp.ReleaseRequest(req)
	s.m.originDuration.Observe(s.opts.Now().Sub(start).Seconds())
	if err != nil {
		s.countOriginError(err)
		fasthttp.ReleaseResponse(resp)
		s.failOrigin(ctx, err)
		return
	}
	s.noteOrigin(ctx, start, resp.StatusCode())
	s.invalidateUnsafe(ctx, resp)
	s.writePass(ctx, resp, cs)
}

// writePass writes an origin response to the client, streaming its body;
// it takes ownership of resp.
func (s *Server) writePass(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, cs cacheStatus) {
	out := &ctx.Response
	out.SetStatusCode(resp.StatusCode())
	installDate(&out.Header, resp.Header.PeekBytes(httpcache.HeaderDate))
	s.consumeSurrogate(&resp.Header)
	conn := connectionValue(&resp.Header)
	for k, v := range resp.Header.All() {
		if httpcache.StoredField(k, conn) || (len(k) == 3 && string(k) == "Age") {
			out.Header.AddBytesKV(k, v)
		}
	}
	s.finishHeaders(out, cs)
	cl := resp.Header.ContentLength()
	body := resp.BodyStream()
	if body == nil {
		if cl >= 0 {
			out.Header.SetContentLength(cl)
		}
		out.SkipBody = ctx.IsHead() || cl > 0
		fasthttp.ReleaseResponse(resp)
		return
	}
	pr := &passReader{s: s, resp: resp, body: body, declared: int64(cl)}
	if cl < 0 {
		cl = -1
	}
	out.ImmediateHeaderFlush = true
	out.SetBodyStream(pr, cl)
}

// passReader streams an origin body to a client, turning a short or
// failed body into an error so that fasthttp closes the connection.
type passReader struct {
	s        *Server
	resp     *fasthttp.Response
	body     io.Reader
	declared int64 // <0: unknown
	got      int64
}

func (p *passReader) Read(b []byte) (int, error) {
	n, err := p.body.Read(b)
	p.got += int64(n)
	p.s.m.responseBytes.Add(float64(n))
	switch {
	case err == io.EOF && p.declared >= 0 && p.got != p.declared:
		err = fmt.Errorf("%w: %d of %d bytes", ErrTruncated, p.got, p.declared)
	case err != nil && err != io.EOF:
		err = bodyError(err)
	}
	if err != nil && err != io.EOF {
		p.s.countOriginError(err)
	}
	return n, err
}

// Close releases the origin response (and its connection).
func (p *passReader) Close() error {
	if p.resp != nil {
		p.resp.CloseBodyStream()
		fasthttp.ReleaseResponse(p.resp)
		p.resp = nil
	}
	return nil
}

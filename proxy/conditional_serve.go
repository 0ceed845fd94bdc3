package proxy

import (
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// Client conditionals (RFC 9110 §13.1.1, §13.1.3, §13.2; RFC 9111 §4.3.2).
// A GET or HEAD with If-None-Match (weak comparison, lists, "*") or
// If-Modified-Since is answered 304 from a response the cache would serve
// (fresh, validated, or allowed stale) when its validators match: the
// stored Last-Modified, or the stored Date when there is none. Only a 2xx
// response is ever turned into a 304 (§13.2.1: preconditions are ignored
// when the unconditional answer is not 2xx). On a miss the fill fetches the
// whole representation unconditionally (it is shared), and the client's
// conditional is then evaluated against the fetched response.
//
// The 304 carries, from the response it stands for, the fields RFC 9110
// §15.4.5 lists (httpcache.NotModifiedField), plus Age, Via and
// Cache-Status; no body and no Content-Length.

// clientNotModified reports whether the request may get a 304 for a
// response with this status and validators.
func clientNotModified(req *fasthttp.RequestHeader, rp *httpcache.RequestPolicy, status int, etag []byte, lastModified, date time.Time) bool {
	if !rp.Conditional || status < 200 || status > 299 {
		return false
	}
	if lastModified.IsZero() {
		lastModified = date
	}
	return httpcache.NotModified(req, etag, lastModified)
}

// objectNotModified is clientNotModified for a decoded record.
func objectNotModified(ctx *fasthttp.RequestCtx, rp *httpcache.RequestPolicy, o *object) bool {
	return clientNotModified(&ctx.Request.Header, rp, o.Status, o.ETag, o.LastModified, o.Date)
}

// writeNotModified answers 304 with the §15.4.5 fields of kvs; age < 0
// sends no Age.
func (s *Server) writeNotModified(ctx *fasthttp.RequestCtx, kvs []headerKV, age time.Duration, cs cacheStatus) {
	resp := &ctx.Response
	resp.Reset()
	writeNotModifiedHeaders(&resp.Header, kvs)
	s.setAge(&resp.Header, age)
	s.finishHeaders(resp, cs)
	resp.SkipBody = true
}

// writeNotModifiedHeaders sets a 304 status and the §15.4.5 fields of kvs
// on h.
func writeNotModifiedHeaders(h *fasthttp.ResponseHeader, kvs []headerKV) {
	h.SetStatusCode(fasthttp.StatusNotModified)
	for _, kv := range kvs {
		if httpcache.NotModifiedField(kv.Key) {
			h.AddBytesKV(kv.Key, kv.Value)
		}
	}
}

// writeNotModifiedFrom answers 304 for an origin response (a private fill
// handed to its leader); it releases resp.
func (s *Server) writeNotModifiedFrom(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, cs cacheStatus) {
	kvs, _ := copyResponseHeaders(&resp.Header, 0)
	age := time.Duration(-1)
	if a := httpcache.ResponseAge(&resp.Header); a > 0 {
		age = httpcache.Seconds(a)
	}
	s.writeNotModified(ctx, kvs, age, cs)
	resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
}

// responseNotModified is clientNotModified for an origin response.
func responseNotModified(ctx *fasthttp.RequestCtx, rp *httpcache.RequestPolicy, resp *fasthttp.Response) bool {
	if !rp.Conditional {
		return false
	}
	var lm, date time.Time
	if t, ok := httpcache.ParseDate(resp.Header.Peek(fasthttp.HeaderLastModified)); ok {
		lm = t
	}
	if t, ok := httpcache.ParseDate(resp.Header.Peek(fasthttp.HeaderDate)); ok {
		date = t
	}
	return clientNotModified(&ctx.Request.Header, rp, resp.StatusCode(), resp.Header.Peek(fasthttp.HeaderETag), lm, date)
}

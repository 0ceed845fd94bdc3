package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// origin is the request handler. Its state is the stats and the control
// switches, all safe for concurrent use.
type origin struct {
	stats *stats
	fail  atomic.Int64 // 0: normal; a status: every /obj answers it; failClose: close without answering
	epoch atomic.Int64 // added to every object's version
}

const failClose = -1

// lmBase is the Last-Modified of version 0 of every object; version v is
// v hours later, so a new version is newer.
var lmBase = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// smallBody: bodies up to this size are generated into the response buffer;
// larger ones stream.
const smallBody = 64 << 10

func (o *origin) handle(ctx *fasthttp.RequestCtx) {
	path := ctx.Path()
	switch {
	case bytes.HasPrefix(path, []byte("/obj/")):
		o.object(ctx)
	case string(path) == "/_stats" && ctx.IsGet():
		ctx.SetContentType("application/json")
		ctx.SetBody(o.stats.json())
	case string(path) == "/_stats/reset" && ctx.IsPost():
		o.stats.reset()
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	case string(path) == "/_control":
		o.control(ctx)
	case string(path) == "/healthz":
		ctx.SetBodyString("ok\n")
	default:
		defer o.stats.begin(ctx.RequestURI())()
		ctx.Error("origin: no such path; try /obj/1k\n", fasthttp.StatusNotFound)
	}
}

// control: POST /_control?fail=STATUS|close|0&epoch=N sets the switches
// (fail=0 clears); GET shows them.
func (o *origin) control(ctx *fasthttp.RequestCtx) {
	if ctx.IsPost() {
		args := ctx.QueryArgs()
		if v := string(args.Peek("fail")); v != "" {
			n, err := strconv.Atoi(v)
			switch {
			case v == "close":
				n = failClose
			case err != nil || (n != 0 && (n < 200 || n > 599)):
				ctx.Error("origin: fail wants 0, close or a status 200..599\n", fasthttp.StatusBadRequest)
				return
			}
			o.fail.Store(int64(n))
		}
		if v := string(args.Peek("epoch")); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				ctx.Error("origin: epoch wants a non-negative integer\n", fasthttp.StatusBadRequest)
				return
			}
			o.epoch.Store(n)
		}
	}
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, "{\"fail\":%d,\"epoch\":%d}\n", o.fail.Load(), o.epoch.Load())
}

// object serves /obj/<size>[/name...].
func (o *origin) object(ctx *fasthttp.RequestCtx) {
	defer o.stats.begin(ctx.RequestURI())()
	if !ctx.IsGet() && !ctx.IsHead() {
		ctx.Response.Header.Set("Allow", "GET, HEAD")
		ctx.Error("origin: GET or HEAD only\n", fasthttp.StatusMethodNotAllowed)
		return
	}
	if o.failing(ctx) {
		return
	}
	path := string(ctx.Path())
	sizeStr, _, _ := strings.Cut(path[len("/obj/"):], "/")
	size, err := parseSize(sizeStr)
	if err != nil {
		ctx.Error(err.Error()+"\n", fasthttp.StatusBadRequest)
		return
	}
	p, err := parseParams(queryArgs(ctx))
	if err != nil {
		ctx.Error(err.Error()+"\n", fasthttp.StatusBadRequest)
		return
	}
	if len(p.hints) > 0 {
		earlyHints(ctx, p.hints)
	}
	if p.delay > 0 {
		time.Sleep(p.delay)
	}
	version := p.version + o.epoch.Load()
	seed := contentSeed(path, version, variant(ctx, p.vary))
	id := identity{seed: seed, size: size, version: version}
	setHeaders(ctx, &p, id)
	o.respond(ctx, &p, id)
}

// earlyHints sends a 103 Early Hints carrying links as Link fields (to
// HTTP/1.1 clients; fasthttp sends none to 1.0). The final response does
// not repeat them: hdr=Link:... adds one there.
func earlyHints(ctx *fasthttp.RequestCtx, links []string) {
	for _, l := range links {
		ctx.Response.Header.Add("Link", l)
	}
	_ = ctx.EarlyHints()
	ctx.Response.Header.Del("Link")
}

// failing answers per the fail switch and reports whether it did.
func (o *origin) failing(ctx *fasthttp.RequestCtx) bool {
	switch f := o.fail.Load(); {
	case f == failClose:
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(func(c net.Conn) {}) // fasthttp closes the connection
		return true
	case f > 0:
		ctx.SetStatusCode(int(f))
		return true
	}
	return false
}

// respond picks the status (304, 206, 416 or p.status) and the body.
func (o *origin) respond(ctx *fasthttp.RequestCtx, p *params, id identity) {
	b := &body{seed: id.seed, stats: o.stats, segs: []segment{{n: id.size}}}
	ctx.SetStatusCode(p.status)
	switch {
	case p.status == fasthttp.StatusNoContent:
		return
	case p.status != fasthttp.StatusOK:
	case notModified(ctx, p, id):
		o.stats.notModified.Add(1)
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	case len(ctx.Request.Header.Peek("Range")) > 0 && ifRangeHolds(ctx, p, id):
		if !o.ranges(ctx, p, id, b) {
			return
		}
	}
	o.send(ctx, p, b)
}

// ranges applies the Range header to b. It returns false when it answered
// 416 itself.
func (o *origin) ranges(ctx *fasthttp.RequestCtx, p *params, id identity, b *body) bool {
	rs, err := parseRange(string(ctx.Request.Header.Peek("Range")), id.size)
	switch {
	case errors.Is(err, errRangeSyntax):
		return true // serve the whole object
	case err != nil:
		ctx.SetStatusCode(fasthttp.StatusRequestedRangeNotSatisfiable)
		ctx.Response.Header.Set("Content-Range", "bytes */"+strconv.FormatInt(id.size, 10))
		return false
	}
	o.stats.partial.Add(1)
	ctx.SetStatusCode(fasthttp.StatusPartialContent)
	if len(rs) == 1 {
		ctx.Response.Header.Set("Content-Range", contentRange(rs[0], id.size))
		b.segs = []segment{{off: rs[0].start, n: rs[0].end - rs[0].start + 1}}
		return true
	}
	boundary := fmt.Sprintf("strata-origin-%016x", id.seed)
	b.segs = multipartSegments(rs, id.size, boundary, string(ctx.Response.Header.ContentType()))
	ctx.Response.Header.SetContentType("multipart/byteranges; boundary=" + boundary)
	return true
}

// send writes b: raw over the hijacked connection for rate= and truncate=,
// else through fasthttp (generated into the buffer when small, streamed
// otherwise, chunked for chunked=1).
func (o *origin) send(ctx *fasthttp.RequestCtx, p *params, b *body) {
	n := b.Len()
	switch {
	case p.rate > 0 || p.truncate >= 0:
		sendRaw(ctx, p, b)
	case p.chunked:
		ctx.Response.SetBodyStream(b, -1)
	case n <= smallBody && !ctx.IsHead():
		b.WriteTo(ctx.Response.BodyWriter())
	default:
		ctx.Response.SetBodyStream(b, int(n))
	}
}

// queryArgs lists the query's name/value pairs in order.
func queryArgs(ctx *fasthttp.RequestCtx) [][2]string {
	var out [][2]string
	for k, v := range ctx.QueryArgs().All() {
		out = append(out, [2]string{string(k), string(v)})
	}
	return out
}

// variant joins the values of the request headers named in vary.
func variant(ctx *fasthttp.RequestCtx, vary string) string {
	if vary == "" || vary == "*" {
		return ""
	}
	var vals []string
	for _, name := range strings.Split(vary, ",") {
		vals = append(vals, string(ctx.Request.Header.Peek(strings.TrimSpace(name))))
	}
	return strings.Join(vals, "\x00")
}

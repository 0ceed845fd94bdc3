package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// identity is what an object's validators derive from.
type identity struct {
	seed    uint64
	size    int64
	version int64
}

// etag renders the object's entity tag; weak adds W/.
func (id identity) etag(weak bool) string {
	tag := `"` + strconv.FormatUint(id.seed, 16) + "-" + strconv.FormatInt(id.size, 16) + `"`
	if weak {
		return "W/" + tag
	}
	return tag
}

// lastModified is lmBase plus one hour per version.
func (id identity) lastModified() time.Time {
	return lmBase.Add(time.Duration(id.version) * time.Hour)
}

// setHeaders sets the response headers p asks for.
func setHeaders(ctx *fasthttp.RequestCtx, p *params, id identity) {
	h := &ctx.Response.Header
	if p.ctype != "" {
		h.SetContentType(p.ctype)
	} else {
		h.SetContentType("application/octet-stream")
	}
	h.Set("Accept-Ranges", "bytes")
	if cc := p.cacheControl(); cc != "" {
		h.Set("Cache-Control", cc)
	}
	if p.hasExpires {
		h.SetBytesV("Expires", fasthttp.AppendHTTPDate(nil, time.Now().Add(time.Duration(p.expires)*time.Second)))
	}
	if p.etag != 0 {
		h.Set("ETag", id.etag(p.etag == 'w'))
	}
	if p.lm {
		h.SetBytesV("Last-Modified", fasthttp.AppendHTTPDate(nil, id.lastModified()))
	}
	if p.vary != "" {
		h.Set("Vary", p.vary)
	}
	if p.cookie {
		h.Set("Set-Cookie", "session="+strconv.FormatUint(id.seed, 16)+"; Path=/; HttpOnly")
	}
	if p.tags != "" {
		h.Set("Surrogate-Key", p.tags)
	}
	for _, kv := range p.extra {
		h.Add(kv[0], kv[1])
	}
}

// notModified evaluates If-None-Match (weak comparison, RFC 9110 §13.1.2)
// or, without it, If-Modified-Since, against the object's validators.
func notModified(ctx *fasthttp.RequestCtx, p *params, id identity) bool {
	if inm := ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 {
		return p.etag != 0 && etagListMatches(string(inm), id.etag(false), false)
	}
	ims := ctx.Request.Header.Peek("If-Modified-Since")
	if len(ims) == 0 || !p.lm {
		return false
	}
	t, err := fasthttp.ParseHTTPDate(ims)
	return err == nil && !id.lastModified().After(t)
}

// ifRangeHolds reports whether a Range may be applied: no If-Range, or one
// that matches the object strongly (an ETag) or exactly (a date).
func ifRangeHolds(ctx *fasthttp.RequestCtx, p *params, id identity) bool {
	ir := strings.TrimSpace(string(ctx.Request.Header.Peek("If-Range")))
	switch {
	case ir == "":
		return true
	case strings.HasPrefix(ir, `"`) || strings.HasPrefix(ir, "W/"):
		return p.etag == 's' && ir == id.etag(false)
	default:
		t, err := fasthttp.ParseHTTPDate([]byte(ir))
		return err == nil && p.lm && t.Equal(id.lastModified())
	}
}

// etagListMatches compares each tag of an If-None-Match list with tag;
// strong comparison also requires both to be strong.
func etagListMatches(list, tag string, strong bool) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		if strong && strings.HasPrefix(t, "W/") {
			continue
		}
		if strings.TrimPrefix(t, "W/") == strings.TrimPrefix(tag, "W/") {
			return true
		}
	}
	return false
}

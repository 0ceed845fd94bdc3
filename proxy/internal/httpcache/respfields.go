package httpcache

import "github.com/valyala/fasthttp"

// respFields are the response fields StoreDecision reads, gathered in one
// walk over the header (gather) instead of a lookup per field: each
// fasthttp Peek or PeekAll copies and normalises its name and walks every
// field, and StoreDecision reads eleven of them.
//
// What a lookup sees, the walk sees: the lines of a field in the order
// PeekAll gives them, the first one for Peek. Two cases the walk does not
// cover fall back to the lookups (peek): a response that announces
// trailers (fasthttp moves the announced fields out of the header walk,
// where PeekAll still finds them), and a field with more lines than
// maxFieldLines. Field names compare ignoring case, which for the
// normalised names a fasthttp header holds (see ParseRequest) is the
// comparison PeekAll makes with the name it normalises.
//
// Lifetime: the lines borrow h's memory (fasthttp's Peek rule), and what
// lines returns in peek mode lives only until h's next PeekAll.
type respFields struct {
	h    *fasthttp.ResponseHeader
	peek bool // read every field with Peek/PeekAll

	cc, own, cdn, surrogate, expires, vary, age fieldLines
	date, lastModified, etag                    []byte
	hasDate, hasLastModified, hasETag           bool
	setCookie                                   bool
}

// maxFieldLines is how many lines of one field the walk keeps; a field
// with more sends the whole decision to the lookups.
const maxFieldLines = 4

type fieldLines struct {
	n    int
	line [maxFieldLines][]byte
}

// add keeps v and reports whether there was room.
func (fl *fieldLines) add(v []byte) bool {
	if fl.n == maxFieldLines {
		return false
	}
	fl.line[fl.n] = v
	fl.n++
	return true
}

// gather reads h's fields in one walk (see the type comment). It does
// not allocate.
func (f *respFields) gather(h *fasthttp.ResponseHeader, o *PolicyOptions) {
	f.h = h
	for range h.Trailers() {
		f.peek = true
		return
	}
	for k, v := range h.All() {
		if !f.add(k, v, o) {
			f.peek = true
			return
		}
	}
}

// add files one field line; false when a field has too many lines.
func (f *respFields) add(k, v []byte, o *PolicyOptions) bool {
	if len(k) == len(o.TargetedField) && equalFold(k, o.TargetedField) && !f.own.add(v) {
		return false
	}
	switch len(k) {
	case len("Age"):
		if equalFold(k, fasthttp.HeaderAge) {
			return f.age.add(v)
		}
	case len("Date"): // and ETag, Vary
		switch {
		case equalFold(k, fasthttp.HeaderDate):
			f.date, f.hasDate = first(f.date, v, f.hasDate), true
		case equalFold(k, fasthttp.HeaderETag):
			f.etag, f.hasETag = first(f.etag, v, f.hasETag), true
		case equalFold(k, fasthttp.HeaderVary):
			return f.vary.add(v)
		}
	case len("Expires"):
		if equalFold(k, fasthttp.HeaderExpires) {
			return f.expires.add(v)
		}
	case len("Set-Cookie"):
		f.setCookie = f.setCookie || equalFold(k, fasthttp.HeaderSetCookie)
	case len("Cache-Control"): // and Last-Modified
		switch {
		case equalFold(k, fasthttp.HeaderCacheControl):
			return f.cc.add(v)
		case equalFold(k, fasthttp.HeaderLastModified):
			f.lastModified, f.hasLastModified = first(f.lastModified, v, f.hasLastModified), true
		}
	case len(HeaderCDNCacheControl): // and Surrogate-Control
		switch {
		case equalFold(k, HeaderCDNCacheControl):
			return f.cdn.add(v)
		case equalFold(k, surrogateControl):
			return f.surrogate.add(v)
		}
	}
	return true
}

// first is the value Peek gives for a field: the first line's.
func first(prev, v []byte, seen bool) []byte {
	if seen {
		return prev
	}
	return v
}

// lines returns the lines of the field name, gathered in fl.
func (f *respFields) lines(fl *fieldLines, name string) [][]byte {
	if f.peek {
		return f.h.PeekAll(name)
	}
	return fl.line[:fl.n]
}

// value returns the first line of the field name, gathered in v (nil
// when absent).
func (f *respFields) value(v []byte, name string) []byte {
	if f.peek {
		return f.h.Peek(name)
	}
	return v
}

// hasSetCookie reports whether the response sets a cookie.
func (f *respFields) hasSetCookie() bool {
	if f.peek {
		for range f.h.Cookies() {
			return true
		}
		return false
	}
	return f.setCookie
}

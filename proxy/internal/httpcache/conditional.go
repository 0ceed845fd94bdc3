package httpcache

import (
	"time"

	"github.com/valyala/fasthttp"
)

// etagMatchWeak is the weak comparison of two entity-tags (RFC 9110
// §8.8.3.2): their opaque-tags are equal, either or both may be weak
// ("W/" prefix). Empty tags never match. Tags are compared as sent, quotes
// included; a tag without quotes (a broken origin) only matches itself.
func etagMatchWeak(a, b []byte) bool {
	_, oa := etagSplit(a)
	_, ob := etagSplit(b)
	return len(oa) > 0 && string(oa) == string(ob)
}

// ETagMatchStrong is the strong comparison (RFC 9110 §8.8.3.2): both tags
// are strong and their opaque-tags are equal.
func ETagMatchStrong(a, b []byte) bool {
	wa, oa := etagSplit(a)
	wb, ob := etagSplit(b)
	return !wa && !wb && len(oa) > 0 && string(oa) == string(ob)
}

// etagSplit trims whitespace and splits off the weak indicator, which is
// case-sensitive ("W/", RFC 9110 §8.8.3).
func etagSplit(t []byte) (weak bool, opaque []byte) {
	t = trimSpace(t)
	if len(t) >= 2 && t[0] == 'W' && t[1] == '/' {
		return true, t[2:]
	}
	return false, t
}

// etagNext splits the first member off an entity-tag list (If-None-Match,
// If-Match): quoted strings may hold commas. It returns the member trimmed
// (possibly "*") and the rest.
func etagNext(v []byte) (member, rest []byte) {
	i := 0
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == ',') {
		i++
	}
	s := i
	if i+1 < len(v) && v[i] == 'W' && v[i+1] == '/' {
		i += 2
	}
	if i < len(v) && v[i] == '"' {
		i++
		for i < len(v) && v[i] != '"' {
			i++
		}
		if i < len(v) {
			i++
		}
	}
	for i < len(v) && v[i] != ',' { // unquoted tag, or junk after the quote
		i++
	}
	return trimRight(v[s:i]), v[i:]
}

// NotModified reports whether a request may be answered 304 Not Modified
// from a stored response with the given ETag (nil when none) and
// Last-Modified (zero when none; a cache may pass the stored Date instead,
// RFC 9111 §4.3.2). RFC 9110 §13.1.2, §13.1.3, §13.2.2:
//   - only GET and HEAD; any other method: false;
//   - If-None-Match, when present, decides alone: true when it is "*" or
//     lists a tag that weakly matches etag; If-Modified-Since is then
//     ignored;
//   - else If-Modified-Since: true when it is one valid HTTP-date and
//     lastModified is not after it; an invalid or multi-member value is
//     ignored (false).
//
// The caller answers 304 only from a response it would serve (fresh or
// validated). It does not allocate.
func NotModified(req *fasthttp.RequestHeader, etag []byte, lastModified time.Time) bool {
	if !req.IsGet() && !req.IsHead() {
		return false
	}
	if inm := req.PeekAll(fasthttp.HeaderIfNoneMatch); len(inm) > 0 {
		for _, line := range inm {
			if etagListMatches(line, etag) {
				return true
			}
		}
		return false
	}
	ims := req.PeekAll(fasthttp.HeaderIfModifiedSince)
	if len(ims) != 1 || lastModified.IsZero() {
		return false
	}
	t, ok := ParseDate(ims[0])
	return ok && !lastModified.After(t)
}

// etagListMatches: the list holds "*" or a tag weakly matching etag.
func etagListMatches(list, etag []byte) bool {
	for len(list) > 0 {
		var m []byte
		m, list = etagNext(list)
		if len(m) == 1 && m[0] == '*' {
			return true
		}
		if len(m) > 0 && etagMatchWeak(m, etag) {
			return true
		}
	}
	return false
}

// IfRange reports whether the Range of req applies to a stored response
// with the given ETag, Last-Modified and Date (RFC 9110 §13.1.5): true when
// If-Range is absent; for an entity-tag, when it matches etag strongly; for
// an HTTP-date, when it equals lastModified exactly and lastModified is a
// strong validator, i.e. at least 60 seconds before date (§8.8.2.2). An
// invalid If-Range is false. False means: ignore Range, send the whole
// representation with 200.
func IfRange(req *fasthttp.RequestHeader, etag []byte, lastModified, date time.Time) bool {
	lines := req.PeekAll(fasthttp.HeaderIfRange)
	if len(lines) == 0 {
		return true
	}
	if len(lines) > 1 {
		return false
	}
	v := lines[0]
	v = trimSpace(v)
	if len(v) > 0 && v[0] == '"' || len(v) > 1 && v[0] == 'W' && v[1] == '/' {
		return ETagMatchStrong(v, etag)
	}
	t, ok := ParseDate(v)
	if !ok || lastModified.IsZero() || date.IsZero() {
		return false
	}
	return t.Equal(lastModified) && date.Sub(lastModified) >= time.Minute
}

// Selects304 is RFC 9111 §4.3.4's selection for one stored response, with
// the given ETag (nil when none) and Last-Modified (zero when none), to
// which a request was made conditional and which the 304 with headers h
// answers: a strong ETag in the 304 selects it if it has the same strong
// ETag, a weak one the same weak ETag; without an ETag, a Last-Modified
// selects it if it has the same Last-Modified. A 304 with no validator at
// all is read as confirming it: the origin evaluated a precondition built
// from its validators, and there is no other stored response it could mean
// (§4.3.4's last rule names only a validator-less stored response; origins
// that omit ETag from 304s, against RFC 9110 §15.4.5, are common, and
// refetching for them would cost a full body each time). A 304 whose
// validator contradicts it selects nothing.
func Selects304(h *fasthttp.ResponseHeader, etag []byte, lastModified time.Time) bool {
	if tag := h.Peek(fasthttp.HeaderETag); len(tag) > 0 {
		weak, _ := etagSplit(tag)
		storedWeak, _ := etagSplit(etag)
		if !weak {
			return ETagMatchStrong(tag, etag)
		}
		return storedWeak && etagMatchWeak(tag, etag)
	}
	if lm := h.Peek(fasthttp.HeaderLastModified); len(lm) > 0 {
		t, ok := ParseDate(lm)
		return ok && !lastModified.IsZero() && t.Equal(lastModified)
	}
	return true
}

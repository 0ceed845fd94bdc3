package proxy

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/byterange"
	"strata/proxy/internal/httpcache"
)

// Ranges (RFC 9110 §14). A GET or HEAD with a Range field is answered from
// whatever holds the representation:
//
//   - a stored record (serveRanged): an inline body is cut in memory; a
//     sliced one streams through a sliceSource, which reads only the
//     slices the ranges cover and fetches missing ones from the origin;
//   - no usable record (rangeMiss): a whole-object fill in flight is read
//     at the range's offset (read-while-write); otherwise a slice fetch
//     asks the origin for the slices of the first range only, and its
//     206 creates (or joins) the object's partial record, then the
//     response is served as from a stored record. A 206 without a
//     validator answers the requests that waited for it straight from its
//     own bytes, and a whole-object fill starts behind it
//     (range_private.go).
//
// rangesFor decides the status: 206 (one range → Content-Range; several →
// multipart/byteranges), 416 with "Content-Range: bytes */size" when no
// range is satisfiable, and 200 (the whole representation) when Range is
// malformed, has more than byterange.MaxSpecs specs, or If-Range does not
// hold. A partial record without a Range is served whole (200) the same
// way.

type rangeOutcome uint8

const (
	rangeServed rangeOutcome = iota // response written
	rangeFull                       // not a range answer: serve the stored response as usual
	rangeMissed                     // the record cannot serve it: take the miss path
)

// rangesFor returns the ranges to send of a representation of size bytes
// and the status: 206 (with the ranges), 416, or 200 (nil: all of it).
func rangesFor(h *fasthttp.RequestHeader, size int64, etag []byte, lm, date time.Time) ([]byterange.Range, int) {
	v := h.PeekBytes(httpcache.HeaderRange)
	if len(v) > 0 && httpcache.IfRange(h, etag, lm, date) {
		rs, err := byterange.Parse(nil, v, size)
		switch {
		case err == nil:
			return rs, fasthttp.StatusPartialContent
		case errors.Is(err, byterange.ErrUnsatisfiable):
			return nil, fasthttp.StatusRequestedRangeNotSatisfiable
		}
	}
	return nil, fasthttp.StatusOK
}

// serveRanged answers from the record in st.obj when the request has a
// Range or the body is sliced; an inline body asked for whole is left to
// the caller (rangeFull).
func (s *Server) serveRanged(ctx *fasthttp.RequestCtx, st *reqState, age time.Duration, cs cacheStatus) rangeOutcome {
	o := &st.obj
	lm := o.LastModified
	if o.EdgeCoded {
		// A coding strata made shares the identity's Last-Modified, which
		// therefore tells neither representation's bytes from the other's
		// (RFC 9110 §8.8.1): an If-Range date never matches it, as its
		// weak entity tag does not (compress.go).
		lm = time.Time{}
	}
	rs, code := rangesFor(&ctx.Request.Header, o.BodyLen, o.ETag, lm, o.Date)
	switch {
	case code == fasthttp.StatusRequestedRangeNotSatisfiable:
		s.writeUnsatisfied(ctx, o.BodyLen, cs)
		return rangeServed
	case o.inline() && code == fasthttp.StatusOK:
		return rangeFull
	case o.inline():
		s.writeInlineRanges(ctx, o, rs, age, cs)
		return rangeServed
	}
	st.num = fasthttp.AppendUint(st.num[:0], int(ageSecs(age)))
	return s.serveSliced(ctx, st, st.num, rs, code, cs)
}

// originFailure reports whether err is the origin failing before a body
// (502/504) rather than a reason to take the miss path.
func originFailure(err error) bool {
	f := originFaults[faultOf(err)].err
	return f != ErrTruncated && errors.Is(err, f)
}

func ageSecs(age time.Duration) int64 { return int64(max(age, 0) / time.Second) }

// rangeMiss serves a Range request that no usable record answers. It
// returns false when the request should take the ordinary miss path
// (no Range, malformed Range, too many fills, closing).
func (s *Server) rangeMiss(ctx *fasthttp.RequestCtx, st *reqState, o *origin, cs cacheStatus) bool {
	v := ctx.Request.Header.PeekBytes(httpcache.HeaderRange)
	if len(v) == 0 || s.closed.Load() || s.nfills.Load() >= int64(st.set.opts.MaxFills) {
		return false
	}
	sz := int64(s.opts.SliceSize)
	start, end, ok := rangeProbe(v, sz)
	if !ok {
		return false
	}
	if f := s.fills.joinExisting(st.key); f != nil {
		s.serveFillRanged(ctx, o, cs, f, false)
		return true
	}
	fr := s.fetchRequest(ctx, o, &st.rp)
	var scratch []byte
	sf := s.acquireFetch(st.key, int(start/sz), int((end-1)/sz), &fr, &scratch)
	state, err := sf.waitHeaders()
	if state == fetchReady {
		s.serveFetched(ctx, st, fr, sf, int(start/sz), cs.stored())
		return true
	}
	if state == fetchPrivate {
		if s.servePrivate(ctx, st, o, sf, cs) {
			fasthttp.ReleaseRequest(fr.tmpl)
			return true
		}
		err = errNoValidator
	}
	sf.release()
	fasthttp.ReleaseRequest(fr.tmpl)
	switch {
	case state == fetchRedirect:
		if f := s.fills.joinExisting(st.key); f != nil {
			s.serveFillRanged(ctx, o, cs, f, false)
		} else if c := s.lookupAgain(ctx, st, o); !c.hit() {
			s.miss(ctx, st, o, c) // the fill ended (stored or not) before we could join it
		}
	case errors.Is(err, errNoValidator):
		f, leader := s.fills.join(s, st.key)
		if leader {
			s.startFill(ctx, f, o, st, false)
		}
		s.serveFillRanged(ctx, o, cs, f, leader)
	case originFailure(err):
		s.failOrigin(ctx, err)
	default: // not storable, refused, odd answer: let the origin answer the client itself
		s.pass(ctx, o, cs)
	}
	return true
}

// serveFetched answers from the record a slice fetch just created or
// joined, reading slice idx from that fetch.
func (s *Server) serveFetched(ctx *fasthttp.RequestCtx, st *reqState, fr fetchReq, sf *sliceFetch, idx int, cs cacheStatus) {
	o := &sf.obj
	rs, code := rangesFor(&ctx.Request.Header, o.BodyLen, o.ETag, o.LastModified, o.Date)
	b, err := s.acquireSlicedBody(st.key, o, rs, fr, !ctx.IsHead())
	if err != nil { // cannot happen: the fetch decoded it
		sf.release()
		s.fail(ctx, fasthttp.StatusInternalServerError, "proxy: bad record")
		return
	}
	b.src.adopt(sf, idx)
	if code == fasthttp.StatusRequestedRangeNotSatisfiable {
		_ = b.Close()
		s.writeUnsatisfied(ctx, o.BodyLen, cs)
		return
	}
	age := httpcache.CurrentAge(o.AgeHeader, o.Date, o.RequestTime, o.ResponseTime, s.opts.Now())
	s.writeRanges(ctx, o.Headers, fasthttp.AppendUint(nil, int(ageSecs(age))), code, &b.rangeBody, b, true, cs)
}

// serveFillRanged answers a Range request from a whole-object fill the
// caller holds a reference to: at the range's offset as the body arrives.
func (s *Server) serveFillRanged(ctx *fasthttp.RequestCtx, o *origin, cs cacheStatus, f *fill, leader bool) {
	state, resp, err := f.waitHeaders(leader)
	switch {
	case state == fillFailed:
		f.release()
		s.failOrigin(ctx, err)
		return
	case state == fillPrivate && leader:
		f.release()
		s.writePass(ctx, resp, cs)
		return
	case state == fillPrivate:
		f.release()
		s.pass(ctx, o, cs)
		return
	}
	fwd := cs
	cs = f.status(cs, leader)
	if f.declared < 0 {
		s.serveFill(ctx, f, o, cs)
		return
	}
	rs, code := rangesFor(&ctx.Request.Header, f.declared, f.obj.ETag, f.obj.LastModified, f.obj.Date)
	switch code {
	case fasthttp.StatusOK:
		s.serveFill(ctx, f, o, cs)
		return
	case fasthttp.StatusRequestedRangeNotSatisfiable:
		size := f.declared // f may be recycled once released
		f.release()
		s.writeUnsatisfied(ctx, size, cs)
		return
	}
	if f.farAhead(rs[0].Start) {
		// The fill would keep this client waiting for every byte before
		// its range: the origin answers the range itself, and the fill
		// goes on storing the object without it.
		f.release()
		s.pass(ctx, o, fwd)
		return
	}
	r := f.newReaderAt(rs[0].Start)
	if r == nil {
		s.pass(ctx, o, fwd)
		return
	}
	b := &rangeBody{src: &fillSource{r: r.withClient(ctx, o)}, ranges: rs, size: f.declared, m: s.m}
	s.writeRanges(ctx, f.obj.Headers, fasthttp.AppendUint(nil, int(f.obj.AgeHeader)), code, b, b, true, cs)
}

// fillJoinAhead is how far past a whole-object fill's progress a Range
// request may start and still wait for the fill (at least FillWindow
// slices): 64 MiB arrive in well under a second from an origin worth
// caching in front of. Further ahead, the client would wait for every
// byte before its range (seconds, for random ranges of a large object
// fetched whole because it has no validator), so its range is passed to
// the origin instead while the fill goes on.
const fillJoinAhead = 64 << 20

// farAhead reports whether pos is more than joinAhead past what the fill
// has received.
func (f *fill) farAhead(pos int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return pos > f.received+f.s.joinAhead
}

// rangeProbe returns the first byte a Range value asks for and the end
// of its first range (exclusive), before the size is known. A suffix
// range ("-500") needs the size: the probe is then the first slice.
func rangeProbe(v []byte, sz int64) (start, end int64, ok bool) {
	rs, err := byterange.Parse(nil, v, math.MaxInt64)
	if err != nil {
		return 0, 0, false
	}
	start, end = rs[0].Start, rs[0].End+1
	if start > maxBodyLen {
		return 0, sz, true
	}
	return start, min(end, maxBodyLen), true
}

// writeUnsatisfied answers 416 (RFC 9110 §15.5.17).
func (s *Server) writeUnsatisfied(ctx *fasthttp.RequestCtx, size int64, cs cacheStatus) {
	resp := &ctx.Response
	resp.SetStatusCode(fasthttp.StatusRequestedRangeNotSatisfiable)
	resp.Header.SetBytesKV(httpcache.HeaderContentRange, byterange.AppendUnsatisfied(nil, size))
	s.finishHeaders(resp, cs)
	resp.SetBody(nil)
}

// writeRanges writes the status, the stored headers with Age (digits)
// and Content-Range or the multipart type as b's ranges need, and body
// (b itself, or the pooled value that holds it), which it takes. flush
// sends the headers before the first body byte is ready (a body coming
// from the origin).
func (s *Server) writeRanges(ctx *fasthttp.RequestCtx, hdrs []headerKV, age []byte, code int, b *rangeBody, body io.Reader, flush bool, cs cacheStatus) {
	resp := &ctx.Response
	resp.SetStatusCode(code)
	writeHeaders(&resp.Header, hdrs)
	resp.Header.SetBytesKV(httpcache.HeaderAge, age)
	rs := b.ranges
	switch {
	case code == fasthttp.StatusPartialContent && len(rs) == 1:
		resp.Header.SetBytesKV(httpcache.HeaderContentRange, byterange.AppendContentRange(nil, rs[0], b.size))
	case code == fasthttp.StatusPartialContent:
		b.multi = true
		b.ctype = storedContentType(hdrs)
		b.boundary = newBoundary()
		resp.Header.SetContentTypeBytes(append([]byte("multipart/byteranges; boundary="), b.boundary...))
	}
	s.finishHeaders(resp, cs)
	resp.ImmediateHeaderFlush = flush
	resp.SetBodyStream(body, int(rangeLength(rs, b.multi, b.boundary, b.ctype, b.size)))
}

// writeInlineRanges answers ranges of an inline body, copied now.
func (s *Server) writeInlineRanges(ctx *fasthttp.RequestCtx, o *object, rs []byterange.Range, age time.Duration, cs cacheStatus) {
	resp := &ctx.Response
	resp.SetStatusCode(fasthttp.StatusPartialContent)
	writeHeaders(&resp.Header, o.Headers)
	resp.Header.SetBytesKV(httpcache.HeaderAge, fasthttp.AppendUint(nil, int(ageSecs(age))))
	if len(rs) == 1 {
		resp.Header.SetBytesKV(httpcache.HeaderContentRange, byterange.AppendContentRange(nil, rs[0], o.BodyLen))
		resp.SetBody(o.Body[rs[0].Start : rs[0].End+1])
	} else {
		ctype := storedContentType(o.Headers)
		boundary := newBoundary()
		resp.Header.SetContentTypeBytes(append([]byte("multipart/byteranges; boundary="), boundary...))
		var body []byte
		for i, r := range rs {
			body = byterange.AppendPartHeader(body, i == 0, boundary, ctype, r, o.BodyLen)
			body = append(body, o.Body[r.Start:r.End+1]...)
		}
		resp.SetBody(byterange.AppendPartsEnd(body, boundary))
	}
	s.finishHeaders(resp, cs)
	if !ctx.IsHead() {
		s.m.responseBytes.Add(float64(len(resp.Body())))
	}
}

// newBoundary returns a random multipart boundary (32 hex digits).
func newBoundary() []byte {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		u := rand.Uint64()
		for j := range 8 {
			b[i+j] = byte(u >> (8 * j))
		}
	}
	return []byte("strata-" + hex.EncodeToString(b[:]))
}

// storedContentType returns a copy of the Content-Type among hdrs, or nil.
func storedContentType(hdrs []headerKV) []byte {
	for _, h := range hdrs {
		if bytes.EqualFold(h.Key, httpcache.HeaderContentType) {
			return append([]byte(nil), h.Value...)
		}
	}
	return nil
}

// joinExisting returns the fill running for key with a reference taken,
// or nil; it never starts one.
func (fm *fillMap) joinExisting(key []byte) *fill {
	sh := fm.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f := sh.m[string(key)]; f != nil && f.tryRef() {
		return f
	}
	return nil
}

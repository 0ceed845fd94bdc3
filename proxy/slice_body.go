package proxy

import (
	"sync"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/byterange"
)

// slicedBody is the body of a response served from a sliced object
// (whole, as a 200, or ranges of it): a rangeBody over a sliceSource,
// pooled with its one-range array so that a whole-object hit allocates
// nothing. fasthttp calls Close once the response is written (or
// abandoned), which releases the source and returns the body to its pool.
type slicedBody struct {
	rangeBody
	src    sliceSource
	one    [1]byterange.Range
	srv    *Server
	charge int64 // bytes taken from srv.bodies for the stream buffer and leases
}

var slicedBodyPool = sync.Pool{New: func() any { return new(slicedBody) }}

// acquireSlicedBody returns a body for the object o (copied) under key,
// reading ranges rs (nil: all of it). fr's template (nil tmpl: nothing is
// fetched) is owned by the body from now on, even on error. A body that
// will stream (not for HEAD) takes the bytes of the slices prepare will
// lease, and of its slice buffer unless those are the whole body, from
// Server.bodies, waiting up to StreamWait for room, then taking them
// anyway (counted in strata_stream_budget_overruns_total).
func (s *Server) acquireSlicedBody(key []byte, o *object, rs []byterange.Range, fr fetchReq, stream bool) (*slicedBody, error) {
	b := slicedBodyPool.Get().(*slicedBody)
	b.rangeBody = rangeBody{src: &b.src, frame: b.frame[:0], m: s.m}
	b.srv = s
	if err := b.src.init(s, key, o, fr); err != nil {
		_ = b.Close()
		return nil, err
	}
	if rs == nil {
		b.one[0] = byterange.Range{Start: 0, End: o.BodyLen - 1}
		rs = b.one[:]
	}
	b.ranges, b.size = rs, o.BodyLen
	if stream {
		// The slices prepare leases and, unless they are all the body
		// sends, the stream buffer that reads the others, in one charge:
		// a response never waits for room its own first charge holds.
		charge, whole := b.src.leaseBytes(rs)
		if !whole {
			charge += int64(sliceHeaderLen + o.SliceSize)
		}
		if !s.bodies.acquire(charge, s.opts.StreamWait) {
			s.bodies.force(charge)
			s.m.streamOverruns.Inc()
		}
		b.charge = charge
	}
	return b, nil
}

// Close releases the source and its budget and pools b.
func (b *slicedBody) Close() error {
	_ = b.rangeBody.Close()
	if b.charge != 0 {
		b.srv.bodies.release(b.charge)
		b.charge = 0
	}
	b.srv = nil
	b.rangeBody = rangeBody{frame: b.frame[:0]}
	slicedBodyPool.Put(b)
	return nil
}

// serveSliced answers from the sliced record in st.obj: the ranges rs with
// code 206, or the whole body (rs nil) with 200. Before the status line
// the body is prepared (sliceSource.prepare): if a slice is missing and
// cannot be fetched, or the origin answers its fetch with another
// representation, nothing is written and the request takes the miss
// path; an origin failure is answered 502/504.
func (s *Server) serveSliced(ctx *fasthttp.RequestCtx, st *reqState, age []byte, rs []byterange.Range, code int, cs cacheStatus) rangeOutcome {
	o := &st.obj
	var fr fetchReq
	if o.refetchable() {
		org := st.set.router.pick(ctx.Request.Header.Host())
		if org == nil {
			return rangeMissed
		}
		fr = lazyFetchRequest(ctx, org, &st.rp)
	}
	b, err := s.acquireSlicedBody(st.key, o, rs, fr, !ctx.IsHead())
	if err != nil {
		return rangeMissed
	}
	if !ctx.IsHead() {
		if err := b.src.prepare(b.ranges); err != nil {
			_ = b.Close()
			if originFailure(err) {
				s.failOrigin(ctx, err)
				return rangeServed
			}
			if o.EdgeCoded {
				s.edgeCodedLost(st)
			}
			return rangeMissed
		}
	}
	s.writeRanges(ctx, o.Headers, age, code, &b.rangeBody, b, b.src.sf != nil, cs)
	return rangeServed
}

package proxy

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// Stale serving (RFC 9111 §4.2.4, RFC 5861, PolicyOptions.Grace). The
// verdicts come from httpcache.Evaluate, read once in lookup:
//   - StaleServable (the request's max-stale) and StaleRevalidate
//     (stale-while-revalidate, or the grace when the response carried
//     neither RFC 5861 directive) are served at once with
//     "Cache-Status: strata; hit; detail=stale"; StaleRevalidate also
//     starts one background revalidation (revalidate.go).
//   - MustValidate goes to the origin through the fill; when the fill
//     fails (connection error, timeout) or the origin answers 500, 502, 503
//     or 504, a request whose Verdict has ServeOnError (fresh, or stale
//     within stale-if-error from the response or the request, or the
//     grace) gets the stored response with "fwd=stale;
//     detail=stale-if-error". When the origin cannot be reached at all,
//     a response stale by at most Options.StaleIfUnreachable is served
//     the same way without any directive (§4.2.4: a disconnected cache).
//
// must-revalidate, proxy-revalidate, s-maxage (shared) and no-cache
// (request or response) make httpcache.Evaluate refuse all of these: the
// answer is then the origin's, or 502/504 when the origin fails.

// afterFill handles, for one waiting request, the fill outcomes that take
// more than reading the fill's body: a refreshed record, an origin failure
// with a stored response to fall back on, a client conditional that the
// fetched response satisfies, a varying response that is not this
// request's variant. It reports true when it answered; it has then
// dropped its fill reference and released resp.
func (s *Server) afterFill(ctx *fasthttp.RequestCtx, st *reqState, f *fill, o *origin,
	state fillState, resp *fasthttp.Response, leader bool, cs cacheStatus) bool {
	switch state {
	case fillRefreshed:
		s.serveRefreshed(ctx, st, f, o, cs)
		return true
	case fillFailed:
		if st.have && (st.verdict.ServeOnError || s.unreachableStale(st)) {
			f.release()
			s.serveStale(ctx, st)
			return true
		}
	case fillPrivate:
		if st.have && st.verdict.ServeOnError && serverError(f.rv.status) {
			if resp != nil {
				resp.CloseBodyStream()
				fasthttp.ReleaseResponse(resp)
			}
			f.release()
			s.serveStale(ctx, st)
			return true
		}
		if resp != nil && responseNotModified(ctx, &st.rp, resp) {
			f.release()
			s.writeNotModifiedFrom(ctx, resp, cs)
			return true
		}
	case fillShared:
		return s.afterSharedFill(ctx, st, f, o, leader, cs)
	}
	return false
}

func (s *Server) afterSharedFill(ctx *fasthttp.RequestCtx, st *reqState, f *fill, o *origin, leader bool, cs cacheStatus) bool {
	if !leader && f.rv.vary != nil {
		var ok bool
		st.vk, ok = httpcache.VaryKey(st.vk[:0], f.rv.vary, &ctx.Request.Header)
		if !ok || !bytes.Equal(st.vk, f.rv.vkey) { // another variant: fetch our own
			f.release()
			s.pass(ctx, o, cs)
			return true
		}
	}
	if !objectNotModified(ctx, &st.rp, &f.obj) {
		return false
	}
	cs = f.status(cs, leader)
	age := time.Duration(-1)
	if f.obj.AgeHeader > 0 {
		age = httpcache.Seconds(f.obj.AgeHeader)
	}
	s.writeNotModified(ctx, f.obj.Headers, age, cs)
	f.release()
	return true
}

// unreachableStale: the origin could not be reached and the stored
// response may stand in (Options.StaleIfUnreachable, RFC 9111 §4.2.4).
func (s *Server) unreachableStale(st *reqState) bool {
	o := &st.obj
	return st.set.opts.StaleIfUnreachable > 0 && !o.MustRevalidate && !o.NoCache && !st.rp.CC.NoCache &&
		st.verdict.Staleness <= st.set.opts.StaleIfUnreachable
}

// serveRefreshed answers from the record a 304 just refreshed.
func (s *Server) serveRefreshed(ctx *fasthttp.RequestCtx, st *reqState, f *fill, o *origin, cs cacheStatus) {
	defer f.release()
	if err := decodeObject(&st.obj, f.rv.rec); err != nil { // cannot happen: we encoded it
		s.fail(ctx, fasthttp.StatusBadGateway, "proxy: refreshed record")
		return
	}
	obj := &st.obj
	age := httpcache.CurrentAge(obj.AgeHeader, obj.Date, obj.RequestTime, obj.ResponseTime, s.opts.Now())
	if cs == csRequest {
		cs = csRequest304
	} else {
		cs = csStale304
	}
	if objectNotModified(ctx, &st.rp, obj) {
		s.writeNotModified(ctx, obj.Headers, age, cs)
		return
	}
	if !s.serveStored(ctx, st, age, cs) { // its first slice left the store
		s.pass(ctx, o, csMiss)
	}
}

// serveStale answers with the stored response in st after the origin
// failed.
func (s *Server) serveStale(ctx *fasthttp.RequestCtx, st *reqState) {
	obj := &st.obj
	age := httpcache.CurrentAge(obj.AgeHeader, obj.Date, obj.RequestTime, obj.ResponseTime, s.opts.Now())
	if objectNotModified(ctx, &st.rp, obj) {
		s.writeNotModified(ctx, obj.Headers, age, csStaleError)
		return
	}
	if !s.serveStored(ctx, st, age, csStaleError) {
		s.fail(ctx, fasthttp.StatusBadGateway, "proxy: origin failed and the stored body is gone")
	}
}

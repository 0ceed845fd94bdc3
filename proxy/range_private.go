package proxy

import (
	"github.com/valyala/fasthttp"

	"strata/proxy/internal/byterange"
	"strata/proxy/internal/httpcache"
)

// Cold ranges of objects without validators.
//
// A slice fetch's 206 that names neither ETag nor Last-Modified (and has no
// record with slice digests to be checked against, slice_digest.go) cannot
// be stored as slices of a partial record: nothing proves that slices of
// two fetches belong to one representation. Such a fetch goes private
// (fetchPrivate): it leaves the in-flight map, so no later request joins
// it, stores nothing, and its bytes answer only the requests already
// waiting for it, each from this one origin response. A request whose
// ranges all lie within the fetched run is answered from it at once, so a
// cold 1 KiB range of a large object costs the time of its own slice, not
// of the object (whole, at 64 MiB/s, 256 MiB took 13.2 s); a whole-object
// fill then starts in the background, so that the object is stored (with
// its slices' digests) for the next requests. A request the run does not
// cover (several ranges, or one longer than the run) takes the old way:
// the fill, read at the range's offset or passed on when far ahead
// (serveFillRanged).

// openPrivate opens sf to its waiters as a private fetch of want bytes
// whose record (headers, total size) is rec, a slab sf now owns. It
// runs on the fetch goroutine, in place of accept's adoption.
func (sf *sliceFetch) openPrivate(rec []byte, want int64) error {
	sf.s.fetches.leave(sf)
	sf.mu.Lock()
	defer sf.mu.Unlock()
	sf.rec, sf.private = rec, true
	if err := decodeObject(&sf.obj, sf.rec); err != nil {
		return err // cannot happen: buildRecord encoded it
	}
	sf.want = want
	sf.bufs = make([][]byte, (sf.want+sf.sz-1)/sf.sz)
	sf.state = fetchPrivate
	sf.cond.Broadcast()
	return nil
}

// servePrivate answers the request from the private fetch sf, whose
// reference it takes, when the fetched run holds every range the request
// asks for; then it starts the whole-object fill if none runs. It returns
// false, keeping nothing, when the run does not hold them.
func (s *Server) servePrivate(ctx *fasthttp.RequestCtx, st *reqState, o *origin, sf *sliceFetch, cs cacheStatus) bool {
	rec := &sf.obj
	rs, code := rangesFor(&ctx.Request.Header, rec.BodyLen, rec.ETag, rec.LastModified, rec.Date)
	switch {
	case code == fasthttp.StatusRequestedRangeNotSatisfiable:
		sf.release()
		s.writeUnsatisfied(ctx, rec.BodyLen, cs)
	case code != fasthttp.StatusPartialContent || !sf.holds(rs):
		return false
	default:
		age := httpcache.CurrentAge(rec.AgeHeader, rec.Date, rec.RequestTime, rec.ResponseTime, s.opts.Now())
		b := &rangeBody{src: &fetchSource{sf: sf}, ranges: rs, size: rec.BodyLen, m: s.m}
		s.writeRanges(ctx, rec.Headers, fasthttp.AppendUint(nil, int(ageSecs(age))), code, b, b, true, cs)
	}
	s.fillBehind(ctx, st, o)
	return true
}

// holds reports whether every range lies within the bytes sf fetches.
func (sf *sliceFetch) holds(rs []byterange.Range) bool {
	from := int64(sf.first) * sf.sz
	for _, r := range rs {
		if r.Start < from || r.End >= from+sf.want {
			return false
		}
	}
	return true
}

// fillBehind starts a whole-object fill for st's key in the background,
// unless one runs already or the fill slots are taken; no client waits
// for it.
func (s *Server) fillBehind(ctx *fasthttp.RequestCtx, st *reqState, o *origin) {
	if s.closed.Load() || s.nfills.Load() >= int64(s.cfg().MaxFills) {
		return
	}
	f, leader := s.fills.join(s, st.key)
	if leader {
		s.startFill(ctx, f, o, st, true)
	}
	f.release()
}

// fetchSource reads a private fetch's body, waiting for bytes to arrive.
type fetchSource struct{ sf *sliceFetch }

func (fs *fetchSource) readAt(p []byte, off, _ int64) (int, error) { return fs.sf.readAt(p, off) }

func (fs *fetchSource) lend(int64, int64) ([]byte, error) { return nil, nil }

func (fs *fetchSource) close() {
	if fs.sf != nil {
		fs.sf.release()
		fs.sf = nil
	}
}

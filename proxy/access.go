package proxy

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"strata/hybrid"
	"strata/proxy/internal/httpcache"
)

// AccessRecord is what the proxy knows of a request that its response
// does not show, handed to an AccessLogger once the handler returns.
type AccessRecord struct {
	// CacheStatus is the request's strata_requests_total label: hit,
	// miss, stale, bypass or error; "" if the proxy set no Cache-Status.
	CacheStatus string
	// Detail is the Cache-Status value after "<ViaName>; ".
	Detail string
	// Tier is "memory" or "disk" for a fresh hit, else "none".
	Tier string
	// OriginStatus is the origin's status for a request that waited for
	// the origin (its own exchange, or a shared fill's headers); 0 if it
	// did not.
	OriginStatus int
	// OriginDuration is how long the request waited for the origin's
	// response headers (a miss of a small body: and its body).
	OriginDuration time.Duration
	// Start is when the handler was entered (the server reads no clock per
	// request otherwise: LazyRequestTime, so RequestCtx.Time is not it),
	// from a startClock; for a TimedAccessLogger that says it needs no
	// time, its Second as the handler was entered.
	Start time.Time
}

// AccessLogger receives each request the handler answered.
// REQUIRES: LogAccess returns without blocking; ctx and r are valid only
// during the call.
type AccessLogger interface {
	LogAccess(ctx *fasthttp.RequestCtx, r *AccessRecord)
}

// TimedAccessLogger is an AccessLogger that says whether its records need
// Start from a clock read. One that shows only the second of a line
// (Timed false) gives that second from a clock of its own, Second, read
// as the request arrives: each request is spared two clock reads (a tenth
// of what logging a 1 KiB hit cost on two cores).
type TimedAccessLogger interface {
	AccessLogger
	Timed() bool
	// Second returns the time now to the second, without reading the
	// clock: Start when Timed is false.
	Second() time.Time
}

// accessKey is the RequestCtx user value under which a request that
// waited for the origin carries an *AccessRecord with the origin's part
// (noteOrigin), for LoggedHandler to take once the handler returns. Only
// those requests get one: a hit sets no user value. Setting one and
// removing it again at every request (fasthttp's user values are a list
// compared key by key through interfaces) was most of the wrapper's own
// cost: BenchmarkHit1KiB/wrapper over /off, medians of 12 alternating
// runs, went from 119 to 25 ns.
type accessKey struct{}

var accessPool = sync.Pool{New: func() any { return new(AccessRecord) }}

// LoggedHandler wraps h (s's handler, from HTTPServer) so that each
// request is handed to l after h returns. Requests fasthttp refuses
// before the handler (malformed, header too large) are not logged. From
// the first call on, requests to s read the clock for the origin's part
// (originClock) whether or not they pass through the wrapper: wrapping
// is a matter of setup, not of each request.
func (s *Server) LoggedHandler(h fasthttp.RequestHandler, l AccessLogger) fasthttp.RequestHandler {
	s.logged.Store(true)
	var untimed TimedAccessLogger
	if tl, ok := l.(TimedAccessLogger); ok && !tl.Timed() {
		untimed = tl
	}
	var clock startClock
	return func(ctx *fasthttp.RequestCtx) {
		r := accessPool.Get().(*AccessRecord)
		*r = AccessRecord{}
		if untimed != nil {
			r.Start = untimed.Second()
		} else {
			r.Start = clock.now()
		}
		h(ctx)
		if o := accessRecord(ctx); o != nil {
			r.OriginStatus, r.OriginDuration = o.OriginStatus, o.OriginDuration
			ctx.RemoveUserValue(accessKey{})
			accessPool.Put(o)
		}
		s.classify(&ctx.Response.Header, r)
		l.LogAccess(ctx, r)
		accessPool.Put(r)
	}
}

// startClock tells the time a request arrives from one clock read, not
// time.Now's two (the wall clock's and the monotonic one's: about 100 ns,
// an eighth of what a JSON line cost): the time is a base time.Now taken
// at most startRebase before, plus the monotonic time since. Its wall
// time may therefore lag or lead the wall clock by what NTP slewed it in
// that second (at most 0.5 ms), and a step of the wall clock shows within
// startRebase; the monotonic reading, which durations use, is exact.
type startClock struct {
	base atomic.Pointer[time.Time]
}

const startRebase = time.Second

func (c *startClock) now() time.Time {
	if b := c.base.Load(); b != nil {
		if d := time.Since(*b); d >= 0 && d < startRebase {
			return b.Add(d)
		}
	}
	t := time.Now()
	c.base.Store(&t) // one allocation a second
	return t
}

// classify fills r's cache fields from the Cache-Status the handler set.
func (s *Server) classify(h *fasthttp.ResponseHeader, r *AccessRecord) {
	r.Tier = "none"
	v := h.PeekCanonical(httpcache.HeaderCacheStatus) // set with SetCanonical (addTrace): no key to normalise
	for i := range s.cs {
		if !bytes.Equal(v, s.cs[i]) {
			continue
		}
		cs := cacheStatus(i)
		r.CacheStatus, r.Detail = metricStatusNames[cs.metric()], cacheStatusText[cs]
		switch cs {
		case csHitMemory:
			r.Tier = hybrid.TierMemory.String()
		case csHitDisk:
			r.Tier = hybrid.TierDisk.String()
		}
		return
	}
}

// accessRecord is the record of the origin's part noteOrigin left on the
// request, or nil.
func accessRecord(ctx *fasthttp.RequestCtx) *AccessRecord {
	r, _ := ctx.UserValue(accessKey{}).(*AccessRecord)
	return r
}

// originClock returns the time now when s's requests are logged, and
// the zero time (without reading the clock) when not.
func (s *Server) originClock() time.Time {
	if !s.logged.Load() {
		return time.Time{}
	}
	return s.opts.Now()
}

// noteOrigin records the origin's status and the wait since start (from
// originClock) in a record it leaves on the request for LoggedHandler,
// when s's requests are logged; a zero start or status 0 (the origin
// failed) records nothing. A request that did not pass through the
// wrapper drops its record with its user values, at fasthttp's reset of
// the request.
func (s *Server) noteOrigin(ctx *fasthttp.RequestCtx, start time.Time, status int) {
	if start.IsZero() || status == 0 || !s.logged.Load() {
		return
	}
	r := accessRecord(ctx)
	if r == nil {
		r = accessPool.Get().(*AccessRecord)
		*r = AccessRecord{}
		ctx.SetUserValue(accessKey{}, r)
	}
	r.OriginStatus, r.OriginDuration = status, s.opts.Now().Sub(start)
}

// noteFill records a miss's wait for its fill's headers: the stored
// status of a shared fill, 304 for a refreshed record, the origin
// response's status of a private one.
func (s *Server) noteFill(ctx *fasthttp.RequestCtx, start time.Time, state fillState, f *fill, resp *fasthttp.Response) {
	if start.IsZero() {
		return
	}
	switch {
	case state == fillFailed:
	case state == fillRefreshed:
		s.noteOrigin(ctx, start, fasthttp.StatusNotModified)
	case resp != nil:
		s.noteOrigin(ctx, start, resp.StatusCode())
	case state != fillPrivate:
		s.noteOrigin(ctx, start, f.obj.Status)
	}
}

package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"strata/hybrid"
	"strata/proxy/internal/httpcache"
)

// Server is the caching reverse proxy: a fasthttp handler in front of
// the origins, answering from a Store. A request's way through is noted
// above handler. Safe for concurrent use.
type Server struct {
	// opts are the Options given to New; of them, read only the fields a
	// reload cannot change (settings.go): the reloadable ones are in set.
	opts    Options
	set     atomic.Pointer[settings] // the reloadable settings (settings.go)
	store   Store
	m       *metrics
	via     []byte // "1.1 <ViaName>"
	cs      [csCount][]byte
	fills   fillMap
	fetches fetchMap // slice fetches in flight (Range requests, partial caching)
	vlocks  variantLocks
	nfills  atomic.Int64
	// readAheads counts slices fetched ahead of sequential readers
	// (readahead.go).
	readAheads atomic.Uint64
	nlarge     atomic.Int64 // fills of large bodies (MaxLargeFills)
	// joinAhead: a Range request whose first byte is further than this
	// past what a whole-object fill has received is passed to the origin
	// rather than made to wait for the fill (serveFillRanged).
	joinAhead int64
	bodies    bodyBudget // buffers of responses streaming stored sliced bodies (MaxStreamBytes)
	pool      sync.Pool  // *reqState
	purges    purges
	loop      *loop // CDN-Loop element and verdicts (loop.go)

	cz         compressor    // compression at the edge (compress.go)
	hitHeaders hitHeaders    // prepared response headers of hits (hit_headers.go)
	dates      dateHeaders   // the last Date header prepared for a miss (headers.go)
	deadlines  connDeadlines // client connection deadlines (deadlines.go)

	life   context.Context // the Server's; cancelled by Close, with lives
	cancel context.CancelFunc
	lives  lifeSet        // the contexts of running fills and slice fetches (fill_life.go)
	wg     sync.WaitGroup // running fills
	closed atomic.Bool

	reloadMu sync.Mutex  // serialises Reload and Close's closing of routers
	retired  []*router   // the last routers Reload replaced (maxRetired), closed again at Close
	s3c      *s3Counters // the S3 origins' counters, shared by every settings snapshot
	logged   atomic.Bool // a LoggedHandler wraps the handler (access.go)
}

// reqState is the pooled per-request scratch of the handler.
type reqState struct {
	set  *settings    // the reloadable settings the request started with (handler)
	key  []byte       // object key
	mkey []byte       // record key
	val  []byte       // Store.Get destination
	lv   hybrid.Value // Store.Lend destination: the record; released when the handler returns
	// fmark is the key's fill shard as it was before the store lookup
	// (fillMap.joinSince).
	fmark fillMark
	num   []byte // Age digits
	obj   object
	rp    httpcache.RequestPolicy

	// Revalidation, variants, stale serving.
	pkey    []byte            // primary (URL) key; key is a variant's when the URL varies
	vk      []byte            // secondary (Vary) key
	vkeys   [][]byte          // decoded variant index keys
	rec     []byte            // the stored record st.obj decodes (borrows val's array)
	have    bool              // st.obj holds a stored response for this request
	tier    hybrid.Tier       // tier that answered the variant's record
	verdict httpcache.Verdict // httpcache.Evaluate's verdict on st.obj
	age     time.Duration     // st.obj's current age
	hints   hintSink          // the fill leader's early hints (early_hints.go)
}

// New builds a Server over store. opts is copied; EnsureDefaults is
// applied before Validate.
func New(store Store, opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	pu, err := newPurges(&opts.Purge, opts.Now())
	if errors.Is(err, ErrCorrupt) {
		opts.Logger.Error("proxy: purge state unreadable: everything stored before now is hidden", "err", err)
	} else if err != nil {
		return nil, err
	}
	s3c := new(s3Counters)
	set, err := newSettings(opts, s3c)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	lp, err := newLoop(opts.Loop, opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	s := &Server{opts: opts, store: store, m: m, purges: pu, loop: lp, s3c: s3c,
		via: []byte("1.1 " + opts.ViaName), cs: buildCacheStatus(opts.ViaName)}
	s.set.Store(set)
	if err := s.cz.init(&s.opts.Compress, opts.Registerer); err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	if err := s.registerS3Metrics(opts.Registerer); err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	s.bodies.init(opts.MaxStreamBytes)
	s.joinAhead = max(fillJoinAhead, int64(opts.FillWindow)*int64(opts.SliceSize))
	s.fills.init()
	s.fetches.init()
	s.vlocks.seed = maphash.MakeSeed()
	s.hitHeaders.init()
	s.dates.init()
	s.deadlines.init(opts.ReadTimeout, opts.ClientIdleTimeout, opts.WriteTimeout)
	s.life, s.cancel = context.WithCancel(context.Background())
	s.pool.New = func() any { return &reqState{} }
	return s, nil
}

// HTTPServer returns a fasthttp.Server serving s.handler with the
// configured limits. The caller runs Serve on its listeners and
// ShutdownWithContext on the way out, then Close.
func (s *Server) HTTPServer() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                       s.serve,
		ErrorHandler:                  s.errorHandler,
		ReadBufferSize:                s.opts.MaxHeaderBytes,
		MaxRequestBodySize:            s.opts.MaxRequestBodySize,
		Concurrency:                   s.opts.MaxConns,
		ConnState:                     s.deadlines.connState, // ReadTimeout, WriteTimeout, ClientIdleTimeout: deadlines.go
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		NoDefaultDate:                 true, // a hit keeps its stored Date: see installDate
		DisablePreParseMultipartForm:  true,
		LazyRequestTime:               true, // nothing reads RequestCtx.Time: no clock read per request
		DisableHeaderNamesNormalizing: false,
		CloseOnShutdown:               true,
		Logger:                        slogPrintf{s.opts.Logger},
	}
}

// Close stops new fills, waits for running ones until ctx ends, then
// cancels the rest and waits for them to unwind (each origin read is
// bounded by ResponseTimeout). It returns ctx.Err() if it had to cancel.
func (s *Server) Close(ctx context.Context) error {
	s.closed.Store(true)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.abort()
		<-done
	}
	s.abort()
	s.closeRouters()
	return err
}

// abort cancels the Server's context and ends every fill's and slice
// fetch's (a life starting after this sees the first and ends at once).
func (s *Server) abort() {
	s.cancel()
	s.lives.cancelAll()
}

// serve is the fasthttp handler: handler, then the response's write
// deadline (deadlines.go).
func (s *Server) serve(ctx *fasthttp.RequestCtx) {
	s.handler(ctx)
	s.deadlines.armWrite(ctx.Conn())
	noteHandled(ctx.Conn()) // early_hints.go
}

// errorHandler answers requests fasthttp could not parse.
func (s *Server) errorHandler(ctx *fasthttp.RequestCtx, err error) {
	s.deadlines.armWrite(ctx.Conn())
	noteHandled(ctx.Conn())
	// A connection on which no whole request header arrived within
	// ReadTimeout (an idle new connection, or a slow one) is closed
	// without an answer, as nginx does: an error response nobody asked
	// for lands in a client's idle pool as an "unsolicited response".
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		_ = ctx.Conn().Close()
		return
	}
	s.m.requests[msError].Inc()
	var small *fasthttp.ErrSmallBuffer
	if errors.As(err, &small) {
		ctx.Error("proxy: request header too large", fasthttp.StatusRequestHeaderFieldsTooLarge)
		return
	}
	ctx.Error("proxy: malformed request", fasthttp.StatusBadRequest)
}

// A request's way through.
//
// fasthttp parses the request within Options.MaxHeaderBytes (431 beyond; other
// parse failures, duplicate Content-Length, bad Transfer-Encoding and
// duplicate Host are refused by fasthttp with 400). handler then refuses a
// header carrying both Content-Length and Transfer-Encoding (400; fasthttp
// would let Transfer-Encoding win), picks the origin by Host (421 if none),
// and asks the policy (httpcache.ParseRequest) whether the request may use the
// cache. If not (method, request no-store) it is passed: forwarded and
// streamed back, "Cache-Status: strata; fwd=bypass". Otherwise
// httpcache.BuildKey makes the object key and the record is read from the
// store; a variant index there (variants.go) leads to the record of the
// request's variant. httpcache.Evaluate then decides, with the request's and
// the response's directives: a fresh record, or a stale one the request's
// max-stale accepts, is served: stored status and headers, Age per RFC 9111
// §4.2.3, Via, "Cache-Status: strata; hit; detail=memory|disk" (detail=stale
// when stale); an inline body is copied into fasthttp's response buffer (or,
// from swapBodyMin up, handed to it: setBody), a sliced body streams slice by
// slice (slicedBody, slice_body.go). HEAD is
// answered from a stored GET, and a matching If-None-Match / If-Modified-Since
// with a 304 (conditional_serve.go). A record stale within
// stale-while-revalidate or the grace is served the same way while one
// background revalidation runs (revalidate.go, stale.go). Anything else (must
// validate, corrupt, sliceless, none) goes to the miss path (fwd=stale,
// fwd=request, fwd=miss, fwd=uri-miss; "; stored" added when the response is
// still being stored as its headers go out, see fill.status), carrying the
// stored record along for revalidation and stale-if-error. Unsafe methods are
// passed and invalidate the URL on success (invalidate.go).

// handler serves one request.
func (s *Server) handler(ctx *fasthttp.RequestCtx) {
	if ctx.Request.Header.ContentLength() != -2 && smuggled(ctx.Request.Header.RawHeaders()) {
		s.fail(ctx, fasthttp.StatusBadRequest, "proxy: both Content-Length and Transfer-Encoding")
		return
	}
	if s.refuseLoop(ctx) {
		return
	}
	set := s.set.Load()
	o := set.router.pick(ctx.Request.Header.Host())
	if o == nil {
		s.fail(ctx, fasthttp.StatusMisdirectedRequest, "proxy: no origin for this host")
		return
	}
	if o.s3 != nil && !ctx.IsGet() && !ctx.IsHead() {
		s.fail(ctx, fasthttp.StatusMethodNotAllowed, "proxy: an s3 origin serves GET and HEAD only")
		ctx.Response.Header.Set(fasthttp.HeaderAllow, "GET, HEAD")
		return
	}
	normalizeAcceptEncoding(&ctx.Request.Header) // before keying and forwarding (encoding.go)
	st := s.pool.Get().(*reqState)
	defer s.putState(st)
	st.set = set
	httpcache.ParseRequest(&st.rp, &ctx.Request.Header)
	if !st.rp.Cacheable {
		s.pass(ctx, o, csBypass)
		return
	}
	scheme := schemeHTTP
	if ctx.IsTLS() {
		scheme = schemeHTTPS
	}
	st.key = httpcache.BuildKey(st.key[:0], scheme, &ctx.Request, &set.opts.Key)
	st.mkey = metaKey(st.mkey[:0], st.key)
	st.fmark = s.fills.mark(st.key)
	cs := s.lookup(ctx, st, o)
	if cs.hit() {
		return
	}
	if st.rp.CC.OnlyIfCached {
		s.fail(ctx, fasthttp.StatusGatewayTimeout, "proxy: only-if-cached and not cached")
		return
	}
	if s.rangeMiss(ctx, st, o, cs) {
		return
	}
	s.miss(ctx, st, o, cs)
}

// putState releases what st holds and returns it to the pool.
func (s *Server) putState(st *reqState) {
	st.lv.Release()
	st.set = nil // do not keep a replaced snapshot alive
	s.pool.Put(st)
}

var (
	schemeHTTP  = []byte("http")
	schemeHTTPS = []byte("https")
)

// lookup serves a stored response the request may use (httpcache.Evaluate:
// fresh, allowed stale, or stale-while-revalidate, which also starts a
// background revalidation) and returns its hit status, or returns the
// forward status for the miss path, with the stored response (if any) left
// in st for revalidation and stale-if-error.
func (s *Server) lookup(ctx *fasthttp.RequestCtx, st *reqState, o *origin) cacheStatus {
	st.have = false
	st.pkey = append(st.pkey[:0], st.key...)
	tier, ok := s.store.Lend(st.mkey, &st.lv)
	// A record the memory tier lends in pieces (an entry stored in several
	// runs of arena blocks: hybrid.Value.Spans) is joined here, a copy of
	// the record, counted in the memory tier's Stats.Copied. fasthttp sends
	// a raw body with its header in one writev only as one slice; as a body
	// stream, the pieces go out in a write each after a partial one, which
	// cost about what the copy saves (BenchmarkSplitBodyTCP, 256 KiB: −5%
	// CPU in 2 pieces, +5% in 3, within the noise of a shared machine).
	val := st.lv.Bytes()
	if ok && isVariantIndex(val) {
		val, ok = s.lookupVariant(ctx, st, val)
		tier = st.tier
	}
	if !ok {
		return csURIMiss
	}
	if err := decodeObject(&st.obj, val); err != nil {
		if !isOldVersion(err) {
			s.m.corrupt.Inc()
		}
		return csMiss
	}
	if s.purged(&st.obj, st.key) {
		return csMiss
	}
	st.rec, st.have = val, true
	obj := &st.obj
	now := s.opts.Now()
	age := httpcache.CurrentAge(obj.AgeHeader, obj.Date, obj.RequestTime, obj.ResponseTime, now)
	fi := httpcache.FreshnessInfo{Lifetime: obj.Lifetime, StaleWhileRevalidate: obj.StaleWhileRevalidate,
		StaleIfError: obj.StaleIfError, MustRevalidate: obj.MustRevalidate, NoCache: obj.NoCache}
	st.verdict, st.age = httpcache.Evaluate(&fi, age, &st.rp, &st.set.opts.Policy), age
	cs := csHitMemory
	if tier == hybrid.TierDisk {
		cs = csHitDisk
	}
	switch st.verdict.Freshness {
	case httpcache.StaleServable, httpcache.StaleRevalidate:
		cs = csHitStale
	case httpcache.MustValidate:
		if age < obj.Lifetime && !obj.NoCache {
			return csRequest
		}
		return csStale
	}
	if objectNotModified(ctx, &st.rp, obj) {
		s.writeStoredNotModified(ctx, obj, age, cs)
	} else if !s.serveStored(ctx, st, age, cs) {
		return csMiss
	}
	if st.verdict.Freshness == httpcache.StaleRevalidate {
		s.revalidateInBackground(ctx, st, o)
	}
	return cs
}

// serveStored writes the stored response in st.obj. It returns false
// (and writes nothing) when the response cannot be promised whole: a
// sliced body with a slice missing that cannot be fetched (see
// serveSliced).
func (s *Server) serveStored(ctx *fasthttp.RequestCtx, st *reqState, age time.Duration, cs cacheStatus) bool {
	o := &st.obj
	if !o.inline() || len(ctx.Request.Header.PeekBytes(httpcache.HeaderRange)) > 0 {
		if r := s.serveRanged(ctx, st, age, cs); r != rangeFull {
			return r == rangeServed
		}
	}
	resp := &ctx.Response
	s.writeStoredHeaders(&resp.Header, o, cs)
	s.setAge(&resp.Header, max(age, 0))
	s.m.requests[cs.metric()].Inc()
	s.setBody(ctx, st, o.Body)
	if !ctx.IsHead() {
		s.m.responseBytes.Add(float64(len(o.Body)))
	}
	return true
}

// swapBodyMin is the body size from which a hit's body is handed to the
// response instead of copied (a 256KiB hit spent 22% of its CPU on that
// copy in the peer benchmark's run of 256 KiB hits, and a third once the
// copy out of the memory tier was counted too).
const swapBodyMin = 32 << 10

// setBody sets resp's body to body. Below swapBodyMin it is copied and a
// hit allocates nothing (TestHitAllocs). From swapBodyMin up it is not
// copied: a body in st.lv (the record the store lent, lookup) goes to the
// socket from there (setLentBody: the store's pin is held until fasthttp
// has written the response); a body in st.val (a variant's record) is
// swapped with the response's body buffer, which st.val keeps for the next
// request (the array then starts at the body, so it comes back a record
// header shorter and is reallocated about once per capacity slack / header
// size large hits). A body elsewhere (a record a revalidation just built)
// is copied.
func (s *Server) setBody(ctx *fasthttp.RequestCtx, st *reqState, body []byte) {
	resp := &ctx.Response
	switch {
	case len(body) < swapBodyMin:
		resp.SetBody(body)
	case sameArrayEnd(body, st.lv.Bytes()):
		setLentBody(ctx, &st.lv, body)
	case sameArrayEnd(body, st.val):
		st.val = resp.SwapBody(body)[:0]
	default:
		resp.SetBody(body)
	}
}

// sameArrayEnd reports whether the capacity of sub and of buf (both
// non-empty) ends at the same byte: sub was sliced from buf's array (the
// decoder slices a record's body without a capacity limit).
func sameArrayEnd(sub, buf []byte) bool {
	if cap(sub) == 0 || cap(buf) == 0 {
		return false
	}
	return &sub[:cap(sub)][cap(sub)-1] == &buf[:cap(buf)][cap(buf)-1]
}

// finishHeaders adds Via and Cache-Status and counts the request.
func (s *Server) finishHeaders(resp *fasthttp.Response, cs cacheStatus) {
	s.addTrace(&resp.Header, cs)
	s.m.requests[cs.metric()].Inc()
}

// addTrace adds Via and Cache-Status to h.
func (s *Server) addTrace(h *fasthttp.ResponseHeader, cs cacheStatus) {
	h.AddBytesKV(httpcache.HeaderVia, s.via)
	h.SetCanonical(httpcache.HeaderCacheStatus, s.cs[cs])
}

// fail answers with an error status; never stored.
func (s *Server) fail(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString(msg + "\n")
	s.finishHeaders(&ctx.Response, csError)
}

// failOrigin answers an origin failure with its status (504 for a
// timeout, else 502) and its sentinel's text (originFaults).
func (s *Server) failOrigin(ctx *fasthttp.RequestCtx, err error) {
	f := &originFaults[faultOf(err)]
	s.fail(ctx, f.status, f.err.Error())
}

// countOriginError counts err under its kind in strata_origin_errors_total.
func (s *Server) countOriginError(err error) {
	s.m.originErrors[faultOf(err)].Inc()
}

// smuggled reports a request header carrying both Content-Length and
// Transfer-Encoding (RFC 9112 §6.3: a request smuggling shape). fasthttp
// lets Transfer-Encoding win; we refuse. raw is the raw header block.
func smuggled(raw []byte) bool {
	var cl, te bool
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		cl = cl || bytes.EqualFold(name, httpcache.HeaderContentLength)
		te = te || bytes.EqualFold(name, httpcache.HeaderTransferEncoding)
	}
	return cl && te
}

// slogPrintf adapts a slog.Logger to fasthttp's Logger.
type slogPrintf struct{ l *slog.Logger }

// NewPrintfLogger adapts l to fasthttp's Logger, as the Server's own
// fasthttp.Server logs.
func NewPrintfLogger(l *slog.Logger) fasthttp.Logger { return slogPrintf{l} }

func (p slogPrintf) Printf(format string, args ...any) {
	p.l.Debug("fasthttp", "msg", fmt.Sprintf(format, args...))
}

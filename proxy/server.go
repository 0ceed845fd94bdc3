package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"strata/hybrid"
)

// Server is the caching reverse proxy: a fasthttp handler in front of
// the origins, answering from a Store. See the package doc for a
// request's way through. Safe for concurrent use.
type Server struct {
	opts    Options
	store   Store
	router  *router
	m       *metrics
	via     []byte // "1.1 <ViaName>"
	cs      [csCount][]byte
	fills   fillMap
	fetches fetchMap // slice fetches in flight (issue 6)
	nfills  atomic.Int64
	pool    sync.Pool // *reqState
	purges  purges

	life   context.Context // parent of every fill; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // running fills
	closed atomic.Bool
}

// reqState is the pooled per-request scratch of the handler.
type reqState struct {
	key  []byte // object key
	mkey []byte // record key
	val  []byte // Store.Get destination
	num  []byte // Age digits
	obj  object
	rp   RequestPolicy
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
	r, err := newRouter(opts.Origins)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	s := &Server{opts: opts, store: store, router: r, m: m, purges: pu,
		via: []byte("1.1 " + opts.ViaName), cs: buildCacheStatus(opts.ViaName)}
	s.fills.init()
	s.fetches.init()
	s.life, s.cancel = context.WithCancel(context.Background())
	s.pool.New = func() any { return &reqState{} }
	return s, nil
}

// HTTPServer returns a fasthttp.Server serving s.Handler with the
// configured limits. The caller runs Serve on its listeners and
// ShutdownWithContext on the way out, then Close.
func (s *Server) HTTPServer() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                       s.Handler,
		ErrorHandler:                  s.errorHandler,
		ReadBufferSize:                s.opts.MaxHeaderBytes,
		MaxRequestBodySize:            s.opts.MaxRequestBodySize,
		Concurrency:                   s.opts.MaxConns,
		ReadTimeout:                   s.opts.ReadTimeout,
		WriteTimeout:                  s.opts.WriteTimeout,
		IdleTimeout:                   s.opts.ClientIdleTimeout,
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		NoDefaultDate:                 true, // a hit keeps its stored Date: see installDate
		DisablePreParseMultipartForm:  true,
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
		s.cancel()
		<-done
	}
	s.cancel()
	s.router.close()
	return err
}

// errorHandler answers requests fasthttp could not parse.
func (s *Server) errorHandler(ctx *fasthttp.RequestCtx, err error) {
	s.m.requests[msError].Inc()
	var small *fasthttp.ErrSmallBuffer
	if errors.As(err, &small) {
		ctx.Error("proxy: request header too large", fasthttp.StatusRequestHeaderFieldsTooLarge)
		return
	}
	ctx.Error("proxy: malformed request", fasthttp.StatusBadRequest)
}

// Handler serves one request.
func (s *Server) Handler(ctx *fasthttp.RequestCtx) {
	if ctx.Request.Header.ContentLength() != -2 && smuggled(ctx.Request.Header.RawHeaders()) {
		s.fail(ctx, fasthttp.StatusBadRequest, "proxy: both Content-Length and Transfer-Encoding")
		return
	}
	o := s.router.pick(ctx.Request.Header.Host())
	if o == nil {
		s.fail(ctx, fasthttp.StatusMisdirectedRequest, "proxy: no origin for this host")
		return
	}
	st := s.pool.Get().(*reqState)
	defer s.pool.Put(st)
	ParseRequest(&st.rp, &ctx.Request.Header)
	if !st.rp.Cacheable {
		s.pass(ctx, o, csBypass)
		return
	}
	scheme := schemeHTTP
	if ctx.IsTLS() {
		scheme = schemeHTTPS
	}
	st.key = BuildKey(st.key[:0], scheme, &ctx.Request, &s.opts.Key)
	st.mkey = metaKey(st.mkey[:0], st.key)
	cs := s.lookup(ctx, st)
	if cs == csHitMemory || cs == csHitDisk {
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

var (
	schemeHTTP  = []byte("http")
	schemeHTTPS = []byte("https")
)

// lookup serves a fresh stored response and returns its hit status, or
// returns the forward status for the miss path.
func (s *Server) lookup(ctx *fasthttp.RequestCtx, st *reqState) cacheStatus {
	val, tier, ok := s.store.Get(st.mkey, st.val[:0])
	st.val = val[:0]
	if !ok {
		return csURIMiss
	}
	if err := decodeObject(&st.obj, val); err != nil {
		s.m.corrupt.Inc()
		return csMiss
	}
	if s.purged(&st.obj, st.key) {
		return csMiss
	}
	now := s.opts.Now()
	age := CurrentAge(st.obj.AgeHeader, st.obj.Date, st.obj.RequestTime, st.obj.ResponseTime, now)
	switch usable(&st.obj, &st.rp, age) {
	case useRefused:
		return csRequest
	case useStale:
		return csStale
	}
	cs := csHitMemory
	if tier == hybrid.TierDisk {
		cs = csHitDisk
	}
	if !s.serveStored(ctx, st, age, cs) {
		return csMiss
	}
	return cs
}

type use uint8

const (
	useFresh   use = iota
	useStale       // not fresh enough for this request
	useRefused     // the request's directives forbid a stored answer
)

// usable is the serve-time freshness check (RFC 9111 §4.2, §5.2.1): to
// be replaced by the policy's Evaluate, which also knows max-stale,
// stale-while-revalidate and stale-if-error.
func usable(o *object, rp *RequestPolicy, age time.Duration) use {
	if rp.CC.NoCache {
		return useRefused
	}
	lifetime := o.Lifetime
	if rp.CC.MaxAge >= 0 {
		lifetime = min(lifetime, time.Duration(rp.CC.MaxAge)*time.Second)
	}
	if rp.CC.MinFresh >= 0 {
		age += time.Duration(rp.CC.MinFresh) * time.Second
	}
	if age < lifetime {
		return useFresh
	}
	return useStale
}

// serveStored writes the stored response in st.obj. It returns false
// (and writes nothing) when the body's first slice is missing.
func (s *Server) serveStored(ctx *fasthttp.RequestCtx, st *reqState, age time.Duration, cs cacheStatus) bool {
	o := &st.obj
	if o.Partial || len(ctx.Request.Header.PeekBytes(hdrRange)) > 0 {
		if r := s.serveRanged(ctx, st, age, cs); r != rangeFull {
			return r == rangeServed
		}
	}
	var sr *sliceReader
	if !o.inline() {
		sr = s.openSlices(st.key, o)
		if sr == nil {
			return false
		}
	}
	resp := &ctx.Response
	resp.SetStatusCode(o.Status)
	writeHeaders(&resp.Header, o.Headers)
	st.num = fasthttp.AppendUint(st.num[:0], int(max(age, 0)/time.Second))
	resp.Header.SetBytesKV(hdrAge, st.num)
	s.finishHeaders(resp, cs)
	if sr != nil {
		resp.SetBodyStream(sr, int(o.BodyLen))
		return true
	}
	resp.SetBody(o.Body)
	if !ctx.IsHead() {
		s.m.responseBytes.Add(float64(len(o.Body)))
	}
	return true
}

// finishHeaders adds Via and Cache-Status and counts the request.
func (s *Server) finishHeaders(resp *fasthttp.Response, cs cacheStatus) {
	resp.Header.AddBytesKV(hdrVia, s.via)
	resp.Header.SetBytesKV(hdrCacheStatus, s.cs[cs])
	s.m.requests[cs.metric()].Inc()
}

// fail answers with an error status; never stored.
func (s *Server) fail(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString(msg + "\n")
	s.finishHeaders(&ctx.Response, csError)
}

// failOrigin maps an origin error to 504 or 502 (STYLE rule 8).
func (s *Server) failOrigin(ctx *fasthttp.RequestCtx, err error) {
	if errors.Is(err, ErrOriginTimeout) {
		s.fail(ctx, fasthttp.StatusGatewayTimeout, "proxy: origin timeout")
		return
	}
	if errors.Is(err, ErrOriginFraming) {
		s.fail(ctx, fasthttp.StatusBadGateway, ErrOriginFraming.Error())
		return
	}
	s.fail(ctx, fasthttp.StatusBadGateway, "proxy: origin unreachable")
}

func (s *Server) countOriginError(err error) {
	switch {
	case errors.Is(err, ErrOriginTimeout):
		s.m.originErrors[oeTimeout].Inc()
	case errors.Is(err, ErrTruncated):
		s.m.originErrors[oeTruncated].Inc()
	default:
		s.m.originErrors[oeUnreachable].Inc()
	}
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
		cl = cl || bytes.EqualFold(name, hdrContentLength)
		te = te || bytes.EqualFold(name, hdrTransferEncoding)
	}
	return cl && te
}

// slogPrintf adapts a slog.Logger to fasthttp's Logger.
type slogPrintf struct{ l *slog.Logger }

func (p slogPrintf) Printf(format string, args ...any) {
	p.l.Debug("fasthttp", "msg", fmt.Sprintf(format, args...))
}

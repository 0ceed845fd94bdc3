package proxy

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// Misses and fills.
//
// A miss joins the fill for its key in a sharded in-flight map, or starts one.
// The fill runs in a goroutine owned by the Server, with its own context
// (an opLife: bounded by FillTimeout and ended by the Server's Close): a
// client that leaves does not cancel it. It asks the origin for the whole GET, made
// conditional on the stored record's validators when it revalidates one (a 304
// refreshes the record in place, see revalidate.go). When the headers arrive,
// httpcache.StoreDecision says whether the response may be stored (a varying
// one under its variant's key); if not (or its Content-Length exceeds
// MaxObjectSize, or it is a 5xx while a stored response may stand in for it),
// the response is handed to the leader alone, which streams it through, and
// every waiter makes its own origin request: a private answer is never shared.
// Otherwise all of them read the same body as it arrives (read-while-write),
// with "collapsed" in the waiters' Cache-Status. A request whose fill failed
// before it answered is answered as for an origin failure (stale if allowed,
// else 502 or 504); one whose fill fails after has its connection cut.
//
// Commit: the body is stored only when it ended with EOF and its length
// matches the declared Content-Length; the last slice is inserted before the
// record, so a reader never sees a record whose slices were never written. A
// truncated or failed body is never recorded (its early slices are orphans
// that age out; their generation does not match any record), and every client
// reading it gets an error from the body stream, which makes fasthttp close
// the connection: short of the declared Content-Length, or a chunked body
// without its final chunk.

// A fill is one origin fetch shared by every request for its key that
// arrives while it runs (request coalescing). It is run by its own
// goroutine, owned by the Server (wg, ended by Close through s.lives), with
// a context of its own: no client's disconnect cancels it. Every holder of
// a *fill holds a reference; the last release recycles the fill with its
// buffers (fill_pool.go, which states what may borrow them and until when).
//
// Body buffering: the fill keeps a window of FillWindow slice buffers;
// slice i lives in slot i%FillWindow. Buffers come from slabPool and grow
// (doubling, up to SliceSize) only as bytes arrive: no Content-Length sizes
// an allocation. A completed slice is
// inserted into the store as soon as the next one starts. Before a slot is
// reused the fill waits for every reader that still needs its slice: the
// store may have dropped it (admission), and a reader must not be cut off
// because the origin is faster than its client. While the object is being
// stored that wait is bounded by FillLagWait per reader: a reader that held
// the fill back that long is detached and goes on alone, reading slices
// back from the store; if the store dropped one it waits for the fill to
// commit and reads on from the record, fetching missing slices as a hit
// does (fillReader.resume); only when that fails does it end with
// ErrFillLagged and its client see a closed connection. When the object
// is not stored (it grew past MaxObjectSize) the wait is unbounded, and the
// fill stops when no reader is left. Memory per fill is at most
// FillWindow × (SliceSize + slice header) (plus, for each detached reader,
// the one buffer it may still be writing from: readers write window bytes
// to their clients without copying them, fillReader.WriteTo, and a slot
// reused under a detached reader takes a fresh buffer, fill.disown), and
// at most MaxFills fills run at once (beyond that misses are passed
// through), so fill memory is at most
// MaxFills × FillWindow × (SliceSize + 64).
type fill struct {
	s    *Server
	key  []byte // object key the fill runs for (fill map key), owned
	skey []byte // object key the response is stored under: key, or a variant's (variants.go)
	rv   fillReval
	// kb holds the store keys of the fill goroutine's inserts: a key
	// array on the stack would escape to the heap through Store.Insert.
	kb [256]byte
	// compress: store the body's compressed representations at commit
	// (compress.go).
	compress bool

	mu    sync.Mutex
	cond  sync.Cond // progress, headers, end, a reader leaving
	state fillState
	err   error // failure; readers return it (their client connection closes)
	refs  int   // handlers holding the fill + the fill goroutine; slots released at 0

	obj    object // the record being built; obj.Headers borrow hdrBuf
	hdrBuf []byte
	hdrKVs []headerKV // obj.Headers' array, kept for reuse (fill_pool.go)
	// block is obj.Headers as their record's header block, the lines in
	// hdrBuf they are views into (appendStoredLines); nil when the record
	// encodes them itself (none, or one that cannot be a line).
	block    []byte
	handOff  *fasthttp.Response // fillPrivate: the origin response, for the leader
	declared int64              // origin Content-Length, or <0 when unknown
	received int64
	done     bool // the whole body arrived with the right length
	storing  bool
	inserted int // slices [0, inserted) were offered to the store
	window   [][]byte
	slotIdx  []int
	readers  []*fillReader
	waiting  bool // the fill goroutine waits for a reader to advance
	large    bool // counted in Server.nlarge (takeLarge)
	lagTimer *time.Timer
	expiry   time.Time
	// digests: the digest of every slice offered to the store, when
	// digesting (a 200 without a strong validator: slice_digest.go).
	digests   []byte
	digesting bool
	// unpaced: a wait for room in the store's write queues ran out; the
	// fill inserts without waiting from then on (paced). Fill goroutine only.
	unpaced bool
	// life is the fill's context: FillTimeout, and the Server's Close
	// (fill_life.go).
	life opLife
	// r0 is the first reader (addReader); its f is set once given out.
	r0 fillReader
	// noPool: something may use the fill after its last reference is
	// dropped; it is left to the garbage collector (fill_pool.go).
	noPool bool
}

type fillState uint8

const (
	fillPending   fillState = iota // waiting for the origin's headers
	fillShared                     // storable: readers share the body
	fillPrivate                    // not storable: the leader got the response, others fetch their own
	fillFailed                     // the origin failed before headers
	fillRefreshed                  // a 304 refreshed the stored record (revalidate.go)
)

// fillMap is the sharded in-flight map key → fill.
type fillMap struct {
	seed   maphash.Seed
	shards [64]fillShard
}

type fillShard struct {
	mu sync.Mutex
	m  map[string]*fill
	// ended counts the fills of this shard that left the map (remove); a
	// request compares it with the mark it took before its store lookup
	// to learn whether a fill may have stored its key since (joinSince).
	ended atomic.Uint64
	_     [32]byte
}

// fillMark is what a request knows of its key's shard before its store
// lookup (fillMap.mark).
type fillMark struct {
	sh    *fillShard
	ended uint64
}

// maxRechecks bounds the store lookups a miss repeats because fills of
// its shard ended meanwhile; past it, the request leads a fill anyway (at
// worst one more origin request, as before rechecks existed).
const maxRechecks = 2

func (fm *fillMap) init() {
	fm.seed = maphash.MakeSeed()
	for i := range fm.shards {
		fm.shards[i].m = make(map[string]*fill)
	}
}

// join returns the fill for key, creating it (leader = true) if none
// runs. The caller holds a reference and must drop it (f.release) or hand
// it to a reader.
func (fm *fillMap) join(s *Server, key []byte) (f *fill, leader bool) {
	f, leader, _ = fm.joinSince(s, key, fillMark{})
	return f, leader
}

func (fm *fillMap) shard(key []byte) *fillShard {
	return &fm.shards[maphash.Bytes(fm.seed, key)%uint64(len(fm.shards))]
}

// mark is taken before a store lookup of key, for joinSince.
func (fm *fillMap) mark(key []byte) fillMark {
	sh := fm.shard(key)
	return fillMark{sh: sh, ended: sh.ended.Load()}
}

// joinSince is join for a request whose store lookup, made after mark m,
// missed: when no fill runs for key but one may have ended (stored its
// response) since the lookup, it creates none and returns ok = false, and
// the caller looks the store up again. Without this check, a request that
// missed just before a fill stored its key and joined just after the fill
// left the map would fetch the key from the origin a second time. A zero
// mark never asks for a recheck.
func (fm *fillMap) joinSince(s *Server, key []byte, m fillMark) (f *fill, leader, ok bool) {
	sh := fm.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f = sh.m[string(key)]; f != nil && f.tryRef() {
		return f, false, true
	}
	if m.sh != nil && (f != nil || sh.ended.Load() != m.ended) {
		return nil, false, false // an ended fill still in the map, or one that left since the lookup
	}
	// None, or one that has ended but not yet left the map: a new fill
	// replaces it (remove deletes only its own entry).
	if f != nil {
		delete(sh.m, string(key)) // the map's key string is the new fill's (mapKey)
	}
	f = acquireFill(s, key)
	sh.m[f.mapKey()] = f
	return f, true, true
}

// tryRef takes a reference to f unless it has ended (done or failed): a
// request must not be served the body of a fill that finished before it
// arrived; the store has it, if it was stored. REQUIRES: the shard lock.
func (f *fill) tryRef() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done || f.err != nil {
		return false
	}
	f.refs++
	return true
}

func (fm *fillMap) remove(f *fill) {
	sh := fm.shard(f.key)
	sh.mu.Lock()
	if sh.m[string(f.key)] == f {
		delete(sh.m, string(f.key))
		sh.ended.Add(1)
	}
	sh.mu.Unlock()
}

// miss serves a cacheable request that the store could not answer.
func (s *Server) miss(ctx *fasthttp.RequestCtx, st *reqState, o *origin, cs cacheStatus) {
	if s.closed.Load() || s.nfills.Load() >= int64(st.set.opts.MaxFills) {
		s.pass(ctx, o, cs)
		return
	}
	f, leader, ok := s.fills.joinSince(s, st.key, st.fmark)
	for n := 0; !ok; n++ {
		if cs = s.lookupAgain(ctx, st, o); cs.hit() {
			return
		}
		if n+1 >= maxRechecks {
			st.fmark = fillMark{}
		}
		f, leader, ok = s.fills.joinSince(s, st.key, st.fmark)
	}
	t0 := s.originClock()
	if leader {
		s.startFill(ctx, f, o, st, false)
	}
	state, resp, err := f.waitHeaders(leader)
	s.noteFill(ctx, t0, state, f, resp)
	if s.afterFill(ctx, st, f, o, state, resp, leader, cs) {
		return
	}
	switch {
	case state == fillFailed:
		f.release()
		s.failOrigin(ctx, err)
	case state == fillPrivate && leader:
		f.release()
		s.writePass(ctx, resp, cs)
	case state == fillPrivate:
		f.release()
		s.pass(ctx, o, cs)
	default:
		s.serveFill(ctx, f, o, f.status(cs, leader))
	}
}

// status is the Cache-Status of a request answered from f's body: the
// leader's forward status cs, or collapsed, with "; stored" only while f
// still stores the body. It is sent before the body: when the fill fails
// or stops storing later (the body outgrew MaxObjectSize or its
// Content-Length), the header cannot be taken back; a failure then cuts
// the client's connection, which tells it the response is not whole.
func (f *fill) status(cs cacheStatus, leader bool) cacheStatus {
	cs = cs.stored()
	if !leader {
		cs = csCollapsed
	}
	f.mu.Lock()
	storing := f.storing
	f.mu.Unlock()
	if !storing {
		cs = cs.unstored()
	}
	return cs
}

// lookupAgain is lookup for a request that has been looked up before: it
// starts again from the URL's key (lookupVariant may have moved st.key
// to a variant's, which lookup would take for the URL's) and takes the
// fill mark again.
func (s *Server) lookupAgain(ctx *fasthttp.RequestCtx, st *reqState, o *origin) cacheStatus {
	st.key = append(st.key[:0], st.pkey...)
	st.mkey = metaKey(st.mkey[:0], st.key)
	st.fmark = s.fills.mark(st.key)
	return s.lookup(ctx, st, o)
}

// startFill starts the fill f that the request st leads: it gives the fill
// its keys and the record it revalidates (prepareFill), builds the origin
// request from the client's and runs the exchange on the leader's
// goroutine (leadFill; the origin's 103s reach the leader's client,
// hintsFor). A background revalidation passes background: the fill runs
// on a goroutine of its own, and an error answer never replaces what is
// being served.
func (s *Server) startFill(ctx *fasthttp.RequestCtx, f *fill, o *origin, st *reqState, background bool) {
	s.prepareFill(f, st)
	if background {
		f.rv.onError = true
	}
	rp := &st.rp
	req := fasthttp.AcquireRequest()
	s.prepareFillRequest(req, ctx, o)
	f.addValidators(req)
	s.nfills.Add(1)
	s.m.inflightFills.Inc()
	s.wg.Add(1)
	if background {
		go s.runFill(f, o, req, *rp)
		return
	}
	s.hintsFor(req, ctx, st)
	s.leadFill(f, o, req, *rp)
	st.hints.ctx = nil // the exchange is over; req may live on in the fill goroutine
}

// leadFill runs a fill's origin exchange on the goroutine of the request
// that leads it, which would only wait for the headers anyway. A body the
// origin declares small (smallFillBytes) is read and stored here too, so
// the common miss costs no goroutine hand-off and its response goes out in
// one write (serveFill); any other body is pumped by a goroutine of its
// own while the leader and its followers stream it.
func (s *Server) leadFill(f *fill, o *origin, req *fasthttp.Request, rp httpcache.RequestPolicy) {
	f.life.start(&s.lives, s.life, s.cfg().FillTimeout)
	ctx := &f.life
	resp := fasthttp.AcquireResponse()
	inline := true
	defer func() {
		if inline {
			s.closeFill(f, recover())
		}
	}()
	reqTime, respTime, refreshed, err := s.exchange(ctx, f, o, req, resp, &rp)
	if err != nil || refreshed {
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		if err != nil {
			s.countOriginError(err)
			f.fail(err)
		}
		return
	}
	if cl := resp.Header.ContentLength(); cl < 0 || cl > smallFillBytes {
		inline = false
		grp := rp // only this copy escapes: the inline path takes no allocation for rp
		go func() {
			defer s.endFill(f)
			s.fillFrom(f, &req.Header, resp, &grp, reqTime, respTime)
			fasthttp.ReleaseRequest(req)
		}()
		return
	}
	s.fillFrom(f, &req.Header, resp, &rp, reqTime, respTime)
	fasthttp.ReleaseRequest(req)
}

// serveFill answers from a shared fill: the stored headers now, the body
// as it arrives.
func (s *Server) serveFill(ctx *fasthttp.RequestCtx, f *fill, o *origin, cs cacheStatus) {
	r := f.newReader()
	if r == nil { // the window moved past the start of an unstored body
		s.pass(ctx, o, cs)
		return
	}
	r.withClient(ctx, o)
	resp := &ctx.Response
	resp.SetStatusCode(f.obj.Status)
	s.writeFillHeaders(&resp.Header, f.obj.Headers)
	if f.obj.AgeHeader > 0 {
		resp.Header.SetBytesKV(httpcache.HeaderAge, fasthttp.AppendUint(nil, int(f.obj.AgeHeader)))
	}
	s.finishHeaders(resp, cs)
	if body, ok := f.wholeBody(); ok {
		// Done and within one slice (a small body its leader read):
		// headers and body leave in one write.
		s.m.responseBytes.Add(float64(len(body)))
		resp.SetBody(body)
		_ = r.Close()
		return
	}
	resp.ImmediateHeaderFlush = true
	resp.SetBodyStream(r, int(f.declared))
}

// wholeBody returns the body of a fill that has committed a body of at
// most one slice, still in its first slot, borrowed (valid while the
// caller holds its reference).
func (f *fill) wholeBody() ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done || f.err != nil || f.received > int64(f.s.opts.SliceSize) || len(f.slotIdx) == 0 || f.slotIdx[0] != 0 {
		return nil, false
	}
	return f.window[0][sliceHeaderLen : sliceHeaderLen+int(f.received)], true
}

// runFill is the fill goroutine.
func (s *Server) runFill(f *fill, o *origin, req *fasthttp.Request, rp httpcache.RequestPolicy) {
	f.life.start(&s.lives, s.life, s.cfg().FillTimeout)
	ctx := &f.life
	defer s.endFill(f)
	resp := fasthttp.AcquireResponse()
	reqTime, respTime, refreshed, err := s.exchange(ctx, f, o, req, resp, &rp)
	if err != nil || refreshed {
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		if err != nil {
			s.countOriginError(err)
			f.fail(err)
		}
		return
	}
	s.fillFrom(f, &req.Header, resp, &rp, reqTime, respTime)
	fasthttp.ReleaseRequest(req)
}

// endFill is the deferred end of a fill goroutine: it turns a panic into
// a failure and gives back the fill's reference and slot.
func (s *Server) endFill(f *fill) {
	s.closeFill(f, recover())
}

// closeFill is endFill with the panic value p its caller recovered (nil
// when none): recover works only when called by the deferred function
// itself, which for leadFill's inline path is a closure.
func (s *Server) closeFill(f *fill, p any) {
	if p != nil {
		s.opts.Logger.Error("proxy: fill panicked", "panic", p)
		f.mu.Lock()
		f.noPool = true // its state is whatever the panic left: not recycled
		f.mu.Unlock()
		f.fail(fmt.Errorf("proxy: fill panicked: %v", p))
	}
	f.life.finish()
	s.fills.remove(f)
	if f.large {
		s.nlarge.Add(-1)
	}
	f.release()
	s.nfills.Add(-1)
	s.m.inflightFills.Dec()
	s.wg.Done()
}

// smallFillBytes: a fill whose declared length is at most this is small:
// its window never holds more than its body.
const smallFillBytes = 64 << 10

// takeLarge reports whether f may go on as a shared, stored fill: always
// for a small body, and for a large one (over smallFillBytes, or of unknown
// length) only while fewer than MaxLargeFills run; it then counts f until
// endFill.
func (s *Server) takeLarge(f *fill, declared int64) bool {
	if declared >= 0 && declared <= smallFillBytes {
		return true
	}
	for {
		n := s.nlarge.Load()
		if n >= int64(s.cfg().MaxLargeFills) {
			s.m.fillsOverLimit.Inc()
			return false
		}
		if s.nlarge.CompareAndSwap(n, n+1) {
			f.large = true
			return true
		}
	}
}

// fillFrom runs the fill from the origin's response (headers read, body
// streaming) within f's life, started by the caller; it takes ownership
// of resp. A slice fetch whose origin
// ignored Range enters here too (adoptFill).
// req is the request sent to the origin (its header selects the variant);
// the caller keeps ownership of it.
func (s *Server) fillFrom(f *fill, req *fasthttp.RequestHeader, resp *fasthttp.Response, rp *httpcache.RequestPolicy, reqTime, respTime time.Time) {
	var si httpcache.StoreInfo
	pol := &s.cfg().Policy // one snapshot: MaySurrogate is about its TargetedField
	httpcache.StoreDecision(&si, rp, resp.StatusCode(), &resp.Header, respTime, pol)
	if si.MaySurrogate {
		consumeSurrogate(&resp.Header, pol)
	}
	cl := int64(resp.Header.ContentLength())
	body := resp.BodyStream()
	if body == nil && resp.StatusCode() == fasthttp.StatusNoContent {
		body = noContent{} // RFC 9110 §15.3.5: no content; stored and served empty
	}
	store := si.Store && cl <= s.opts.MaxObjectSize && body != nil && !f.keepPrior(resp.StatusCode()) &&
		s.takeLarge(f, cl) && s.setVariant(f, req, &resp.Header, si.MayVary, s.storeExpiry(&si, respTime))
	f.compress = store && s.compressible(&resp.Header, &si, cl) // at commit (compress.go)
	f.rv.status = resp.StatusCode()
	if !store {
		f.setPrivate(resp) // the leader owns resp now
		return
	}
	f.start(&si, resp, reqTime, respTime)
	f.life.watch(body, &f.cond)
	err := f.pump(&f.life, body)
	f.life.unwatch()
	if err != nil {
		s.fillFailed(&f.life, f, err)
	}
	resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
}

// fillFailed fails f with err, the reason its body pump stopped: past
// FillTimeout that is a timeout, whatever the read returned. A fill
// nobody reads any more is not an origin failure and is not counted.
func (s *Server) fillFailed(ctx context.Context, f *fill, err error) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrOriginTimeout) {
		err = fmt.Errorf("%w: fill_timeout %v: %v", ErrOriginTimeout, s.cfg().FillTimeout, err)
	}
	if !errors.Is(err, errNoReaders) {
		s.countOriginError(err)
	}
	f.fail(err)
}

// start records the response headers and opens the fill to readers.
func (f *fill) start(si *httpcache.StoreInfo, resp *fasthttp.Response, reqTime, respTime time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := &f.obj
	o.Status = resp.StatusCode()
	o.Gen = rand.Uint64()
	o.SliceSize = f.s.opts.SliceSize
	o.RequestTime, o.ResponseTime = reqTime, respTime
	o.Date, o.Expires, o.LastModified = si.Date, si.Expires, si.LastModified
	o.AgeHeader = si.Age // every Age line, RFC 9111 §5.1 (httpcache.ResponseAge)
	o.Lifetime, o.Heuristic = si.Lifetime, si.Heuristic
	o.StaleWhileRevalidate, o.StaleIfError = si.StaleWhileRevalidate, si.StaleIfError
	o.MustRevalidate, o.NoCache = si.MustRevalidate, si.NoCache
	o.Vary, o.VariantKey = f.rv.vary, f.rv.vkey
	var whole bool
	f.hdrKVs, f.hdrBuf, whole = appendStoredLines(f.hdrKVs[:0], f.hdrBuf[:0], &resp.Header, len(dateLine)+httpDateLen+2+len(si.ETag))
	if si.DateMissing { // RFC 9110 §6.6.1: record when it was received
		n := len(f.hdrBuf) + len(dateLine)
		f.hdrBuf = fasthttp.AppendHTTPDate(append(f.hdrBuf, dateLine...), si.Date)
		f.hdrKVs = append(f.hdrKVs, headerKV{Key: f.hdrBuf[n-len(dateLine) : n-2 : n-2], Value: f.hdrBuf[n:len(f.hdrBuf):len(f.hdrBuf)]})
		f.hdrBuf = append(f.hdrBuf, "\r\n"...)
	}
	o.Headers = f.hdrKVs
	f.block = nil
	if whole && len(f.hdrBuf) > 0 {
		f.block = f.hdrBuf[:len(f.hdrBuf):len(f.hdrBuf)]
	}
	f.hdrBuf = append(f.hdrBuf, si.ETag...)
	o.ETag = f.hdrBuf[len(f.hdrBuf)-len(si.ETag):]
	if len(o.ETag) == 0 {
		o.ETag = nil
	}
	if cl := resp.Header.ContentLength(); cl >= 0 {
		f.declared = int64(cl)
	}
	if o.Status == fasthttp.StatusNoContent {
		f.declared = 0 // whatever Content-Length says (RFC 9110 §8.6)
	}
	f.expiry = f.s.storeExpiry(si, respTime)
	f.digesting = o.Status == fasthttp.StatusOK && !hasValidator(o)
	w := f.s.opts.FillWindow
	if cap(f.window) < w || cap(f.slotIdx) < w {
		f.window, f.slotIdx = make([][]byte, w), make([]int, w)
	}
	f.window, f.slotIdx = f.window[:w], f.slotIdx[:w]
	for i := range f.slotIdx {
		f.slotIdx[i] = -1
	}
	f.storing = true
	f.state = fillShared
	f.cond.Broadcast()
}

// noContent is the empty body of a 204, which fasthttp's client does not
// give a body stream.
type noContent struct{}

func (noContent) Read([]byte) (int, error) { return 0, io.EOF }

func (f *fill) setPrivate(resp *fasthttp.Response) {
	f.mu.Lock()
	f.state, f.handOff = fillPrivate, resp
	f.cond.Broadcast()
	f.mu.Unlock()
}

// fail records err; readers see it and their connections close.
func (f *fill) fail(err error) {
	f.mu.Lock()
	if f.err == nil && !f.done {
		f.err = err
		if f.state == fillPending {
			f.state = fillFailed
		}
	}
	f.cond.Broadcast()
	f.mu.Unlock()
}

// waitHeaders blocks until the origin's headers are known (bounded by
// ResponseTimeout and FillTimeout). The leader of a private fill gets the
// origin response and must release it. A shared fill that has failed
// already is reported failed: the caller has sent nothing yet and answers
// as for an origin failure, not with a status line for a body it knows
// will be cut.
func (f *fill) waitHeaders(leader bool) (fillState, *fasthttp.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.state == fillPending {
		f.cond.Wait()
	}
	var resp *fasthttp.Response
	if f.state == fillPrivate && leader {
		resp, f.handOff = f.handOff, nil
	}
	if f.state == fillShared && f.err != nil {
		return fillFailed, nil, f.err
	}
	return f.state, resp, f.err
}

// release drops a reference; the last one returns the window's buffers
// and the fill itself (fill_pool.go): the caller must not touch f after.
func (f *fill) release() {
	f.mu.Lock()
	f.refs--
	if f.waiting {
		f.waiting = false
		f.cond.Broadcast()
	}
	if f.refs > 0 {
		f.mu.Unlock()
		return
	}
	for i, b := range f.window {
		putSlab(b)
		f.window[i] = nil
	}
	if f.handOff != nil { // no leader took it: a background revalidation
		f.handOff.CloseBodyStream()
		fasthttp.ReleaseResponse(f.handOff)
		f.handOff = nil
	}
	pool := f.recycle()
	f.mu.Unlock()
	if pool {
		fillPool.Put(f)
	}
}

package proxy

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// A fill is one origin fetch shared by every request for its key that
// arrives while it runs (request coalescing). It is run by its own
// goroutine, owned by the Server (wg, cancelled through s.life), with a
// context of its own: no client's disconnect cancels it.
//
// Body buffering: the fill keeps a window of FillWindow slice buffers;
// slice i lives in slot i%FillWindow. Buffers come from slabPool and grow
// (doubling, up to SliceSize) only as bytes arrive. A completed slice is
// inserted into the store as soon as the next one starts. Before a slot is
// reused the fill waits for every reader that still needs its slice: the
// store may have dropped it (admission), and a reader must not be cut off
// because the origin is faster than its client. While the object is being
// stored that wait is bounded by FillLagWait per reader: a reader that held
// the fill back that long is detached and goes on alone, reading slices
// back from the store; if the store dropped one it fails with
// ErrFillLagged and its client sees a closed connection. When the object
// is not stored (it grew past MaxObjectSize) the wait is unbounded, and the
// fill stops when no reader is left. Memory per fill is at
// most FillWindow × (SliceSize + slice header), and at most MaxFills fills
// run at once.
type fill struct {
	s    *Server
	key  []byte // object key the fill runs for (fill map key), owned
	skey []byte // object key the response is stored under: key, or a variant's (variants.go)
	rv   fillReval

	mu    sync.Mutex
	cond  sync.Cond // progress, headers, end, a reader leaving
	state fillState
	err   error // failure; readers return it (their client connection closes)
	refs  int   // handlers holding the fill + the fill goroutine; slots released at 0

	obj      object // the record being built; obj.Headers borrow hdrBuf
	hdrBuf   []byte
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
	shards [64]struct {
		mu sync.Mutex
		m  map[string]*fill
		_  [40]byte
	}
}

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
	sh := &fm.shards[maphash.Bytes(fm.seed, key)%uint64(len(fm.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f = sh.m[string(key)]; f != nil && f.tryRef() {
		return f, false
	}
	// None, or one that has ended but not yet left the map: a new fill
	// replaces it (remove deletes only its own entry).
	f = &fill{s: s, key: append([]byte(nil), key...), refs: 2, declared: -1}
	f.skey = f.key
	f.cond.L = &f.mu
	sh.m[string(f.key)] = f
	return f, true
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
	sh := &fm.shards[maphash.Bytes(fm.seed, f.key)%uint64(len(fm.shards))]
	sh.mu.Lock()
	if sh.m[string(f.key)] == f {
		delete(sh.m, string(f.key))
	}
	sh.mu.Unlock()
}

// miss serves a cacheable request that the store could not answer.
func (s *Server) miss(ctx *fasthttp.RequestCtx, st *reqState, o *origin, cs cacheStatus) {
	if s.closed.Load() || s.nfills.Load() >= int64(s.opts.MaxFills) {
		s.pass(ctx, o, cs)
		return
	}
	f, leader := s.fills.join(s, st.key)
	if leader {
		s.startFill(ctx, f, o, st, false)
	}
	state, resp, err := f.waitHeaders(leader)
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
		if !leader {
			cs = csCollapsed
		} else {
			cs = cs.stored()
		}
		s.serveFill(ctx, f, o, cs)
	}
}

// startFill builds the origin request from the client's and starts the
// fill goroutine.
// startFill starts the fill f that the request st leads: it gives the fill
// its keys and the record it revalidates (prepareFill) and runs it. A
// background revalidation passes background: an error answer then never
// replaces what is being served.
func (s *Server) startFill(ctx *fasthttp.RequestCtx, f *fill, o *origin, st *reqState, background bool) {
	s.prepareFill(f, st)
	if background {
		f.rv.onError = true
	}
	rp := &st.rp
	req := fasthttp.AcquireRequest()
	ctx.Request.Header.CopyTo(&req.Header)
	for _, h := range fillDropped {
		req.Header.DelBytes(h)
	}
	req.Header.DelBytes(hdrContentLength)
	req.Header.SetMethod(fasthttp.MethodGet)
	f.addValidators(req)
	s.prepareOriginRequest(req, ctx, o)
	s.nfills.Add(1)
	s.m.inflightFills.Inc()
	s.wg.Add(1)
	go s.runFill(f, o, req, *rp)
}

// serveFill answers from a shared fill: the stored headers now, the body
// as it arrives.
func (s *Server) serveFill(ctx *fasthttp.RequestCtx, f *fill, o *origin, cs cacheStatus) {
	r := f.newReader()
	if r == nil { // the window moved past the start of an unstored body
		s.pass(ctx, o, cs)
		return
	}
	resp := &ctx.Response
	resp.SetStatusCode(f.obj.Status)
	writeHeaders(&resp.Header, f.obj.Headers)
	if f.obj.AgeHeader > 0 {
		resp.Header.SetBytesKV(hdrAge, fasthttp.AppendUint(nil, int(f.obj.AgeHeader)))
	}
	s.finishHeaders(resp, cs)
	resp.ImmediateHeaderFlush = true
	resp.SetBodyStream(r, int(f.declared))
}

// runFill is the fill goroutine.
func (s *Server) runFill(f *fill, o *origin, req *fasthttp.Request, rp RequestPolicy) {
	ctx, cancel := context.WithTimeout(s.life, s.opts.FillTimeout)
	defer s.endFill(f, cancel)
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
	s.fillFrom(ctx, f, &req.Header, resp, &rp, reqTime, respTime)
	fasthttp.ReleaseRequest(req)
}

// endFill is the deferred end of a fill goroutine: it turns a panic into
// a failure and gives back the fill's reference and slot.
func (s *Server) endFill(f *fill, cancel context.CancelFunc) {
	if p := recover(); p != nil {
		s.opts.Logger.Error("proxy: fill panicked", "panic", p)
		f.fail(fmt.Errorf("proxy: fill panicked: %v", p))
	}
	cancel()
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
		if n >= int64(s.opts.MaxLargeFills) {
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
// streaming); it takes ownership of resp. A slice fetch whose origin
// ignored Range enters here too (adoptFill).
// req is the request sent to the origin (its header selects the variant);
// the caller keeps ownership of it.
func (s *Server) fillFrom(ctx context.Context, f *fill, req *fasthttp.RequestHeader, resp *fasthttp.Response, rp *RequestPolicy, reqTime, respTime time.Time) {
	var si StoreInfo
	StoreDecision(&si, rp, resp.StatusCode(), &resp.Header, respTime, &s.opts.Policy)
	s.consumeSurrogate(&resp.Header)
	cl := int64(resp.Header.ContentLength())
	body := resp.BodyStream()
	if body == nil && resp.StatusCode() == fasthttp.StatusNoContent {
		body = noContent{} // RFC 9110 §15.3.5: no content; stored and served empty
	}
	store := si.Store && cl <= s.opts.MaxObjectSize && body != nil && !f.keepPrior(resp.StatusCode()) &&
		s.takeLarge(f, cl) && s.setVariant(f, req, &resp.Header, s.storeExpiry(&si, respTime))
	f.rv.status = resp.StatusCode()
	if !store {
		f.setPrivate(resp) // the leader owns resp now
		return
	}
	f.start(&si, resp, reqTime, respTime)
	stop := context.AfterFunc(ctx, func() {
		closeBody(body, ctx.Err())
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	err := f.pump(ctx, body)
	stop()
	if err != nil {
		s.countOriginError(err)
		f.fail(err)
	}
	resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
}

// start records the response headers and opens the fill to readers.
func (f *fill) start(si *StoreInfo, resp *fasthttp.Response, reqTime, respTime time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := &f.obj
	o.Status = resp.StatusCode()
	o.Gen = rand.Uint64()
	o.SliceSize = f.s.opts.SliceSize
	o.RequestTime, o.ResponseTime = reqTime, respTime
	o.Date, o.Expires, o.LastModified = si.Date, si.Expires, si.LastModified
	o.AgeHeader = si.Age // every Age line, RFC 9111 §5.1 (ResponseAge)
	o.Lifetime, o.Heuristic = si.Lifetime, si.Heuristic
	o.StaleWhileRevalidate, o.StaleIfError = si.StaleWhileRevalidate, si.StaleIfError
	o.MustRevalidate, o.NoCache = si.MustRevalidate, si.NoCache
	o.Vary, o.VariantKey = f.rv.vary, f.rv.vkey
	o.Headers, f.hdrBuf = copyResponseHeaders(nil, nil, &resp.Header)
	if si.DateMissing { // RFC 9110 §6.6.1: record when it was received
		o.Headers = append(o.Headers, headerKV{Key: hdrDate, Value: fasthttp.AppendHTTPDate(nil, si.Date)})
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
	w := f.s.opts.FillWindow
	f.window, f.slotIdx = make([][]byte, w), make([]int, w)
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
// origin response and must release it.
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
	return f.state, resp, f.err
}

// release drops a reference; the last one returns the window's buffers.
func (f *fill) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refs--
	if f.waiting {
		f.waiting = false
		f.cond.Broadcast()
	}
	if f.refs > 0 {
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
}

var errNoReaders = errors.New("proxy: fill not stored and no reader left")

// pump copies the origin body into the window, offering completed slices
// to the store, and commits the record at the end.
func (f *fill) pump(ctx context.Context, body io.Reader) error {
	sz, hdr := int64(f.s.opts.SliceSize), sliceHeaderLen
	for {
		idx := int(f.received / sz)
		if f.received%sz == 0 && f.received > 0 {
			f.insertSlice(idx - 1)
		}
		f.mu.Lock()
		slot := idx % len(f.window)
		if f.slotIdx[slot] != idx {
			if err := f.takeSlot(ctx, slot, idx); err != nil {
				f.mu.Unlock()
				return err
			}
		}
		buf := growSlab(&f.window[slot], hdr+int(sz))
		f.mu.Unlock()
		n, err := body.Read(buf[len(buf):min(cap(buf), hdr+int(sz))])
		f.mu.Lock()
		f.window[slot] = f.window[slot][:len(buf)+n]
		f.received += int64(n)
		if f.received > f.s.opts.MaxObjectSize || (f.declared >= 0 && f.received > f.declared) {
			f.storing = false
		}
		f.cond.Broadcast()
		f.mu.Unlock()
		if err == io.EOF {
			return f.finish()
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrTruncated, err)
		}
	}
}

// takeSlot makes slot hold slice idx. REQUIRES: f.mu held.
func (f *fill) takeSlot(ctx context.Context, slot, idx int) error {
	evict := int64(f.slotIdx[slot]+1) * int64(f.s.opts.SliceSize)
	// Handlers that joined but have not registered as readers yet count
	// as readers at position 0.
	var deadline time.Time
	for f.slotIdx[slot] >= 0 && (f.pending() > 0 || f.minReaderPos() < evict) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if f.storing {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(f.s.opts.FillLagWait)
				f.wakeAt(f.s.opts.FillLagWait)
			}
			if !now.Before(deadline) {
				f.detachBehind(evict)
				break
			}
		}
		f.waiting = true
		f.cond.Wait()
	}
	if !f.storing && len(f.readers) == 0 && f.pending() == 0 {
		return errNoReaders
	}
	f.slotIdx[slot] = idx
	f.window[slot] = appendSliceRoom(f.window[slot][:0])
	return nil
}

// wakeAt makes the fill goroutine's cond.Wait return after d.
// REQUIRES: f.mu held.
func (f *fill) wakeAt(d time.Duration) {
	if f.lagTimer == nil {
		f.lagTimer = time.AfterFunc(d, func() {
			f.mu.Lock()
			f.cond.Broadcast()
			f.mu.Unlock()
		})
		return
	}
	f.lagTimer.Reset(d)
}

// detachBehind lets every reader before pos go on alone: the fill no
// longer waits for it. REQUIRES: f.mu held.
func (f *fill) detachBehind(pos int64) {
	for _, r := range f.readers {
		if r.pos < pos {
			r.detached = true
			f.s.m.fillDetached.Inc()
		}
	}
}

// pending counts handlers holding the fill that are not readers (yet).
// REQUIRES: f.mu held, called by the fill goroutine (which holds a ref).
func (f *fill) pending() int { return f.refs - 1 - len(f.readers) }

// minReaderPos is the smallest position of a reader. REQUIRES: f.mu held.
func (f *fill) minReaderPos() int64 {
	p := int64(1<<63 - 1)
	for _, r := range f.readers {
		if !r.detached {
			p = min(p, r.pos)
		}
	}
	return p
}

// insertSlice offers slice idx (complete, still in its slot) to the store.
// Only the fill goroutine writes slots, so the slot is read without f.mu.
func (f *fill) insertSlice(idx int) {
	f.mu.Lock()
	ok := f.storing && idx == f.inserted
	slot := f.window[idx%len(f.window)]
	f.mu.Unlock()
	if !ok {
		return
	}
	data := slot[sliceHeaderLen:]
	appendSliceHeader(slot[:0], f.obj.Gen, idx, data)
	var kb [256]byte
	f.s.store.Insert(sliceKey(kb[:0], f.skey, idx), slot, f.expiry)
	f.mu.Lock()
	f.inserted = idx + 1
	f.mu.Unlock()
}

// finish checks the length and commits: last slice first, record last.
func (f *fill) finish() error {
	f.mu.Lock()
	n, declared, storing := f.received, f.declared, f.storing
	f.mu.Unlock()
	if declared >= 0 && n != declared {
		return fmt.Errorf("%w: %d of %d bytes", ErrTruncated, n, declared)
	}
	sz := int64(f.s.opts.SliceSize)
	if storing {
		f.obj.BodyLen = n
		if n <= sz {
			if n > 0 {
				f.obj.Body = f.window[0][sliceHeaderLen:]
			}
		} else {
			f.insertSlice(int((n - 1) / sz))
		}
		rec := getSlab(objectFixedLen + len(f.hdrBuf) + 16 + 6*len(f.obj.Headers) + int(min(n, sz)))
		rec = appendObject(rec[:0], &f.obj)
		var kb [256]byte
		f.s.store.Insert(metaKey(kb[:0], f.skey), rec, f.expiry)
		f.s.recordTags(f.skey, &f.obj)
		putSlab(rec)
		if f.rv.vary != nil {
			f.s.variantCommitted(f)
		}
	}
	// Leave the fill map before readers get the last byte: a request that
	// comes after a client has the whole response must find the stored
	// one (or miss), not join a finished fill whose response may be stale
	// for it by then.
	f.s.fills.remove(f)
	f.mu.Lock()
	f.done = true
	f.cond.Broadcast()
	f.mu.Unlock()
	return nil
}

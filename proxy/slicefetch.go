package proxy

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// A sliceFetch is one origin Range request for a run of consecutive
// slices [first, last] of one object (partial caching). It is
// registered in the Server's per-slice in-flight map under every slice it
// covers, so concurrent requests needing any of them join it instead of
// asking the origin again; it leaves the map once its slices are in the
// store (or it failed). Like a fill it runs in a goroutine owned by the
// Server, with its own context bounded by FillTimeout, and counts in
// MaxFills' gauge.
//
// The origin is asked for "bytes=first*S-((last+1)*S-1)" (S the slice
// size). A 206 whose Content-Range starts there and ends at the run's end
// or the object's is accepted: the object's record is adopted when the
// stored one has the same validator, total size and slice size (so slices
// of every fetch share one generation), or replaced by a new partial
// record (new generation: slices of the old one are never served again)
// when the validator changed or no record exists. A 200 (the origin
// ignores Range) becomes a whole-object fill (adoptFill); other answers
// fail the fetch and the request is passed through.
//
// Memory: a run is at most FillWindow slices, each buffered whole (grown
// only with bytes that arrived) until the last holder releases the fetch.
// Readers copy from the buffers under mu (read-while-write).
type sliceFetch struct {
	s      *Server
	key    []byte // object key, owned
	first  int
	last   int
	sz     int64
	claims []int // slice indices registered in the in-flight map

	mu       sync.Mutex
	cond     sync.Cond
	state    fetchState
	err      error
	refs     int
	rec      []byte // the record's encoding, owned; obj borrows it
	obj      object
	expiry   time.Time
	bufs     [][]byte // slice first+k: header room + data received
	received int64    // body bytes received, from first*sz
	avail    int64    // of those, readable: all, or (digest mode) the checked slices
	want     int64    // body bytes expected
	done     bool
	// base: a copy of the record the fetch completes when that record
	// has slice digests and no strong validator (slice_digest.go); the
	// 206 is then checked slice by slice against it. digests is set
	// (borrowing obj) once the fetch runs in that mode.
	base    []byte
	digests bool
	unpaced bool   // see fill.unpaced; fetch goroutine only
	private bool   // fetchPrivate, or a record not adopted (adoptRecord): nothing is stored; fetch goroutine only
	life    opLife // the fetch's context (fill_life.go)
}

type fetchState uint8

const (
	fetchPending  fetchState = iota // waiting for the origin's headers
	fetchReady                      // 206 accepted: obj is the record, the body streams into bufs
	fetchRedirect                   // the origin answered 200: a whole-object fill runs for the key
	fetchFailed                     // err says why
	fetchPrivate                    // 206 without validator: its bytes serve only its waiters (range_private.go)
)

// fetchMap is the sharded in-flight map sliceKey → fetch, and the
// sharded locks that serialise record adoption per object key.
type fetchMap struct {
	seed   maphash.Seed
	shards [64]struct {
		mu sync.Mutex
		m  map[string]*sliceFetch
		_  [40]byte
	}
	recMu [64]recMutex
}

type recMutex = sync.Mutex

func (fm *fetchMap) init() {
	fm.seed = maphash.MakeSeed()
	for i := range fm.shards {
		fm.shards[i].m = make(map[string]*sliceFetch)
	}
}

func (fm *fetchMap) shard(k []byte) *struct {
	mu sync.Mutex
	m  map[string]*sliceFetch
	_  [40]byte
} {
	return &fm.shards[maphash.Bytes(fm.seed, k)%uint64(len(fm.shards))]
}

// join returns the fetch in flight for slice i of key with a reference
// taken, or registers sf for it (nil returned).
func (fm *fetchMap) join(key []byte, i int, sf *sliceFetch) *sliceFetch {
	var kb [256]byte
	k := sliceKey(kb[:0], key, i)
	sh := fm.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if cur := sh.m[string(k)]; cur != nil {
		if sf == nil {
			cur.mu.Lock()
			cur.refs++
			cur.mu.Unlock()
		}
		return cur
	}
	if sf != nil {
		sh.m[string(k)] = sf
		sf.claims = append(sf.claims, i)
	}
	return nil
}

// leave unregisters sf from every slice it claimed.
func (fm *fetchMap) leave(sf *sliceFetch) {
	var kb [256]byte
	for _, i := range sf.claims {
		k := sliceKey(kb[:0], sf.key, i)
		sh := fm.shard(k)
		sh.mu.Lock()
		if sh.m[string(k)] == sf {
			delete(sh.m, string(k))
		}
		sh.mu.Unlock()
	}
	sf.claims = sf.claims[:0]
}

// fetchReq is what a new fetch needs to ask the origin.
type fetchReq struct {
	o    *origin
	tmpl *fasthttp.Request    // the prepared origin request without Range; copied
	ctx  *fasthttp.RequestCtx // the client's, to build tmpl from when nil (template)
	rp   httpcache.RequestPolicy
	rec  *object // the record the caller serves from, nil when none
}

var (
	errNotStorable  = errors.New("proxy: range answer may not be stored")
	errNoValidator  = errors.New("proxy: range answer has no strong validator")
	errRangeRefused = errors.New("proxy: origin refused the range")
	errChanged      = errors.New("proxy: the object changed at the origin")
)

// acquireFetch returns, with a reference for the caller, a fetch that
// delivers slice idx of key: the one in flight, or a new one for the run
// of missing slices from idx up to limit (at most FillWindow slices). It
// returns nil when, with fr.rec set, slice idx turned out to be in the
// store after all (the caller reads it there). scratch is a buffer for
// store reads.
func (s *Server) acquireFetch(key []byte, idx, limit int, fr *fetchReq, scratch *[]byte) *sliceFetch {
	if cur := s.fetches.join(key, idx, nil); cur != nil {
		return cur
	}
	sf := &sliceFetch{s: s, key: append([]byte(nil), key...), first: idx, sz: int64(s.opts.SliceSize), refs: 2}
	sf.cond.L = &sf.mu
	if fr.rec != nil && fr.rec.hasDigests() && !hasValidator(fr.rec) {
		sf.base = appendObject(getSlab(objectFixedLen+len(fr.rec.Digests)+1024), fr.rec)
	}
	if s.fetches.join(key, idx, sf) != nil {
		return s.acquireFetch(key, idx, limit, fr, scratch) // lost a race; join the winner
	}
	// Re-check the store now that the slice is claimed: a fetch that just
	// ended inserted its slices before it left the map.
	if fr.rec != nil && s.storedSlice(key, fr.rec, idx, scratch) {
		s.fetches.leave(sf)
		return nil
	}
	last := idx
	for i := idx + 1; i <= limit && i-idx < s.opts.FillWindow; i++ {
		if fr.rec != nil && int64(i)*sf.sz >= fr.rec.BodyLen {
			break
		}
		if s.fetches.join(key, i, sf) != nil {
			break
		}
		if fr.rec != nil && s.storedSlice(key, fr.rec, i, scratch) {
			sf.claims = sf.claims[:len(sf.claims)-1]
			s.fetches.unclaim(key, i, sf)
			break
		}
		last = i
	}
	sf.last = last
	req := fasthttp.AcquireRequest()
	fr.template(s).CopyTo(req)
	var rb [64]byte
	r := append(rb[:0], "bytes="...)
	r = strconv.AppendInt(r, int64(idx)*sf.sz, 10)
	r = append(r, '-')
	r = strconv.AppendInt(r, int64(last+1)*sf.sz-1, 10)
	req.Header.SetBytesV("Range", r)
	s.nfills.Add(1)
	s.m.inflightFills.Inc()
	s.wg.Add(1)
	go s.runFetch(sf, fr.o, req, fr.rp)
	return sf
}

func (fm *fetchMap) unclaim(key []byte, i int, sf *sliceFetch) {
	var kb [256]byte
	k := sliceKey(kb[:0], key, i)
	sh := fm.shard(k)
	sh.mu.Lock()
	if sh.m[string(k)] == sf {
		delete(sh.m, string(k))
	}
	sh.mu.Unlock()
}

// storedSlice reports whether slice i of rec is in the store, intact.
func (s *Server) storedSlice(key []byte, rec *object, i int, scratch *[]byte) bool {
	var kb [256]byte
	if cap(*scratch) == 0 {
		*scratch = getSlab(sliceHeaderLen + rec.SliceSize)
	}
	v, _, ok := s.store.Get(sliceKey(kb[:0], key, i), (*scratch)[:0])
	*scratch = v[:0]
	if !ok {
		return false
	}
	_, err := decodeSlice(v, rec.Gen, i, rec.sliceLen(i))
	return err == nil
}

// runFetch is the fetch goroutine.
func (s *Server) runFetch(sf *sliceFetch, o *origin, req *fasthttp.Request, rp httpcache.RequestPolicy) {
	sf.life.start(&s.lives, s.life, s.cfg().FillTimeout)
	ctx := &sf.life
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("proxy: slice fetch panicked", "panic", p)
			sf.fail(fmt.Errorf("proxy: slice fetch panicked: %v", p))
		}
		sf.life.finish()
		s.fetches.leave(sf)
		sf.release()
		s.nfills.Add(-1)
		s.m.inflightFills.Dec()
		s.wg.Done()
	}()
	resp := fasthttp.AcquireResponse()
	reqTime := s.opts.Now()
	err := o.do(ctx, req, resp)
	defer fasthttp.ReleaseRequest(req) // adoptFill reads its header
	respTime := s.opts.Now()
	s.m.originDuration.Observe(respTime.Sub(reqTime).Seconds())
	if err != nil {
		s.countOriginError(err)
		fasthttp.ReleaseResponse(resp)
		sf.fail(err)
		return
	}
	switch resp.StatusCode() {
	case fasthttp.StatusPartialContent:
		if err = sf.accept(resp, &rp, reqTime, respTime); err == nil {
			err = sf.pumpBody(resp.BodyStream())
		}
		if err != nil {
			sf.fail(err)
		}
	case fasthttp.StatusOK:
		s.fetches.leave(sf)
		if s.adoptFill(sf, &req.Header, resp, &rp, reqTime, respTime) {
			return // the fill owns resp
		}
	default:
		sf.fail(fmt.Errorf("%w: status %d", errRangeRefused, resp.StatusCode()))
	}
	resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
}

// adoptFill turns the origin's 200 to a slice fetch into a whole-object
// fill, run by this goroutine, unless one already runs for the key. It
// reports whether it took resp.
func (s *Server) adoptFill(sf *sliceFetch, req *fasthttp.RequestHeader, resp *fasthttp.Response, rp *httpcache.RequestPolicy, reqTime, respTime time.Time) bool {
	f, leader := s.fills.join(s, sf.key)
	f.release() // no handler holds it for us; readers join it themselves
	sf.redirect()
	if !leader {
		return false
	}
	// As prepareFill does for a handler-led fill: the object's own key is
	// the primary key (a Vary in this 200 turns it into a variant).
	f.rv.pkey = append(f.rv.pkey[:0], sf.key...)
	f.skey = f.key
	s.nfills.Add(1)
	s.m.inflightFills.Inc()
	s.wg.Add(1)
	f.life.start(&s.lives, s.life, s.cfg().FillTimeout)
	defer s.endFill(f) // drops the reference join gave this goroutine
	s.fillFrom(f, req, resp, rp, reqTime, respTime)
	return true
}

// pumpBody copies the body into the slice buffers, inserting each
// completed slice into the store, and checks the length at the end.
// The fetch's life closes body when it ends.
func (sf *sliceFetch) pumpBody(body io.Reader) error {
	if body == nil {
		return fmt.Errorf("%w: no body", ErrTruncated)
	}
	sf.life.watch(body, &sf.cond)
	defer sf.life.unwatch()
	hdr, sz := sliceHeaderLen, int(sf.sz)
	for sf.received < sf.want {
		k := int(sf.received / sf.sz)
		room := int(min(sf.sz, sf.want-int64(k)*sf.sz))
		sf.mu.Lock()
		if sf.bufs[k] == nil {
			sf.bufs[k] = appendSliceRoom(nil)
		}
		buf := growSlab(&sf.bufs[k], hdr+sz)
		sf.mu.Unlock()
		n, err := body.Read(buf[len(buf):min(cap(buf), hdr+room)])
		sf.mu.Lock()
		sf.bufs[k] = sf.bufs[k][:len(buf)+n]
		sf.received += int64(n)
		full := len(sf.bufs[k]) == hdr+room
		if !sf.digests {
			sf.avail = sf.received
			sf.cond.Broadcast()
		}
		b := sf.bufs[k]
		sf.mu.Unlock()
		if full && sf.digests {
			// Only the fetch goroutine writes b; readers wait for avail.
			if sliceDigest(b[hdr:]) != sf.obj.digest(sf.first+k) {
				return fmt.Errorf("%w: slice %d does not match its digest", errChanged, sf.first+k)
			}
			sf.mu.Lock()
			sf.avail = sf.received
			sf.cond.Broadcast()
			sf.mu.Unlock()
		}
		if full && !sf.private {
			sf.insert(k)
		}
		if err == io.EOF && sf.received < sf.want {
			return fmt.Errorf("%w: %d of %d bytes", ErrTruncated, sf.received, sf.want)
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%w: %v", ErrTruncated, err)
		}
	}
	sf.mu.Lock()
	sf.done = true
	sf.cond.Broadcast()
	sf.mu.Unlock()
	return nil
}

// insert offers the complete slice first+k to the store. Only the fetch
// goroutine writes the buffers; readers read only the data after the
// header room, so the header is written without mu.
func (sf *sliceFetch) insert(k int) {
	sf.mu.Lock()
	b := sf.bufs[k]
	sf.mu.Unlock()
	idx := sf.first + k
	appendSliceHeader(b[:0], sf.obj.Gen, idx, b[sliceHeaderLen:])
	paced(sf.s.store, len(b), &sf.unpaced)
	var kb [256]byte
	sf.s.store.Insert(sliceKey(kb[:0], sf.key, idx), b, sf.expiry)
}

func (sf *sliceFetch) fail(err error) {
	sf.mu.Lock()
	if sf.err == nil && !sf.done {
		sf.err = err
		sf.state = fetchFailed
	}
	sf.cond.Broadcast()
	sf.mu.Unlock()
}

func (sf *sliceFetch) redirect() {
	sf.mu.Lock()
	sf.state = fetchRedirect
	sf.cond.Broadcast()
	sf.mu.Unlock()
}

// waitHeaders blocks until the origin's answer is known.
func (sf *sliceFetch) waitHeaders() (fetchState, error) {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	for sf.state == fetchPending {
		sf.cond.Wait()
	}
	return sf.state, sf.err
}

// covers reports whether slice i is part of the run.
func (sf *sliceFetch) covers(i int) bool { return sf.first <= i && i <= sf.last }

// readAt copies body bytes at object offset off (within the run) into p,
// waiting for them to arrive. REQUIRES: state fetchReady was seen.
func (sf *sliceFetch) readAt(p []byte, off int64) (int, error) {
	rel := off - int64(sf.first)*sf.sz
	sf.mu.Lock()
	defer sf.mu.Unlock()
	for sf.avail <= rel {
		if sf.err != nil {
			return 0, sf.err
		}
		if sf.done || rel >= sf.want {
			return 0, fmt.Errorf("%w: offset %d past the fetched run", ErrTruncated, off)
		}
		sf.cond.Wait()
	}
	k := rel / sf.sz
	b := sf.bufs[k][sliceHeaderLen:]
	return copy(p, b[rel-k*sf.sz:]), nil
}

// waitChecked blocks until slice i (of the run) is readable: in digest
// mode, until its bytes matched its digest. It returns the fetch's error
// if it failed first. REQUIRES: state fetchReady was seen.
func (sf *sliceFetch) waitChecked(i int) error {
	end := min(int64(i-sf.first+1)*sf.sz, sf.want)
	sf.mu.Lock()
	defer sf.mu.Unlock()
	for sf.avail < end {
		if sf.err != nil {
			return sf.err
		}
		if sf.done {
			return fmt.Errorf("%w: slice %d past the fetched run", ErrTruncated, i)
		}
		sf.cond.Wait()
	}
	return nil
}

// release drops a reference; the last returns the buffers.
func (sf *sliceFetch) release() {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	sf.refs--
	if sf.refs > 0 {
		return
	}
	for i, b := range sf.bufs {
		putSlab(b)
		sf.bufs[i] = nil
	}
	putSlab(sf.rec)
	putSlab(sf.base)
	sf.rec, sf.base = nil, nil
}

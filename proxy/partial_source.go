package proxy

import (
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"

	"strata/hybrid"
	"strata/proxy/internal/byterange"
	"strata/proxy/internal/httpcache"
)

// Sliced bodies: whole or not at all.
//
// A 200 promises Content-Length, so a sliced body is settled before its status
// line (sliceSource.prepare): the first FillWindow slices the response covers
// are leased (held by the response: memory hits pinned, disk reads in buffers
// of its own, within MaxStreamBytes), so a body of up to FillWindow slices is
// held whole before a byte is promised. An object that can have a slice
// fetched again (a 200 with a strong validator, or with slice digests:
// slice_digest.go) has the rest probed in the store (Store.Contains, no copy);
// the first missing slice is fetched from the origin with a Range request
// whose answer must name the record's validator, size and slice size (with
// digests: whose bytes must match the slice's digest, waited for before the
// status line), else the request is a miss. A slice lost while the body
// streams (evicted, or found damaged when read) is fetched the same way. Any
// other object (a record written before digests, a status other than 200)
// cannot have a slice fetched again: one missing makes the request a miss,
// and a body longer than the window is only probed. What remains: an origin
// that fails or changes while a lost slice past the window is fetched
// mid-body, and a slice past the window lost after the probe of an
// unfetchable body; that response ends short (counted in
// strata_responses_cut_short_total) and fasthttp closes the connection.

var (
	// errRangeIgnored: a slice fetch found the origin answering 200 to a
	// Range request; the whole object is being filled instead.
	errRangeIgnored = errors.New("proxy: origin ignores Range")
	// errSliceMissing: a slice of a stored object is not in the store and
	// cannot be fetched from the origin (no strong validator, or a status
	// other than 200), so the object cannot be served whole.
	errSliceMissing = errors.New("proxy: a slice of the object is missing and cannot be fetched")
	// errLeaseBudget: the body is more than a response may read before
	// its status line (FillWindow slices).
	errLeaseBudget = errors.New("proxy: body too large to read before its status line")
)

// sliceSource reads a sliced (possibly partial) object at increasing
// offsets: each slice from the store, checked against the record's
// generation; a slice that is missing (never fetched, evicted, refused by
// admission, unreadable, of another generation) comes from a slice fetch,
// joined if one is in flight, started for the run of missing slices up to
// the end of the range being served otherwise. A fetch whose response
// names another validator than the record's fails the read with
// errChanged: bytes of two versions are never mixed in one response.
// Slices may be fetched only for a 200 with a strong validator or slice
// digests (fetchable); for any other object a missing slice is
// errSliceMissing.
//
// prepare runs before the status line and settles what it can: the
// first FillWindow slices the response will send are leased (see lease;
// from Options.MaxStreamBytes, waiting for room as the stream buffer
// does). For a fetchable object the rest are probed in the store, and the
// first missing one is fetched (its origin answer validated) before a
// byte is promised; a slice lost after that (evicted or found damaged
// while the response streams) is fetched the same way, so only an origin
// failing or changing in that window ends a response short, and never
// before its first bytes. Any other object has a missing slice make the
// request a miss; its body too large to lease whole is only probed past
// the window: a slice lost after the probe cuts it short (counted), the
// price of not fetching a large object whole again on every hit.
//
// It owns a copy of the record, the origin request template and one
// slice buffer; close releases them and any fetch it holds. The zero
// value is ready for init; sources are pooled with their slicedBody.
type sliceSource struct {
	s         *Server
	key       []byte
	rec       []byte
	obj       object // borrows rec
	fr        fetchReq
	fetchable bool
	idx       int          // slice loaded, -1 none
	buf       []byte       // scratch for fetches' store probes
	val       hybrid.Value // slice idx from the store, lent or copied; data borrows it
	data      []byte       // slice idx from the store; nil when it comes from sf
	more      [][]byte     // the rest of data when the store lent it in pieces (val's Spans)
	// at resumes its walk of more where it last stopped: more[atPiece]
	// starts atBase bytes after data. Whoever sets more sets them to 0.
	atPiece int
	atBase  int64
	sf      *sliceFetch
	kbuf    []byte // slice keys; kept with the pooled source (a stack array escapes through Store)
	leases  []leasedSlice
	ahead   bool // read ahead past the range's end (readahead.go)
}

// leasedSlice is a slice read before the status line: buf is its slab,
// data its checked bytes in buf.
type leasedSlice struct {
	idx  int
	val  hybrid.Value // holds data: lent by the memory tier, or a copy
	data []byte
	more [][]byte // as sliceSource.more
}

// init makes r a source for the object o (copied) under key. fr's
// template (built now or on first use) is owned by r from now on; with no
// origin (fr.o nil) nothing is fetched.
func (r *sliceSource) init(s *Server, key []byte, o *object, fr fetchReq) error {
	r.s, r.idx, r.data, r.more, r.sf, r.ahead = s, -1, nil, nil, nil, false
	r.atPiece, r.atBase = 0, 0
	r.key = append(r.key[:0], key...)
	r.rec = appendObject(r.rec[:0], o)
	r.fr = fr
	if err := decodeObject(&r.obj, r.rec); err != nil {
		return err
	}
	r.fr.rec = &r.obj
	r.fetchable = fr.o != nil && r.obj.refetchable()
	return nil
}

// fetchRequest builds the template of the Range requests slice fetches
// send for this client request: the client's headers, minus conditionals
// and Range, as a GET prepared for o.
func (s *Server) fetchRequest(ctx *fasthttp.RequestCtx, o *origin, rp *httpcache.RequestPolicy) fetchReq {
	fr := fetchReq{o: o, ctx: ctx, rp: *rp}
	fr.template(s)
	return fr
}

// lazyFetchRequest is fetchRequest with the template built only when a
// fetch needs it (most sliced hits fetch nothing): from ctx, which must
// then still hold the client's request (true while fasthttp writes the
// response's body).
func lazyFetchRequest(ctx *fasthttp.RequestCtx, o *origin, rp *httpcache.RequestPolicy) fetchReq {
	return fetchReq{o: o, ctx: ctx, rp: *rp}
}

// template returns fr's origin request template, building it first if
// needed.
func (fr *fetchReq) template(s *Server) *fasthttp.Request {
	if fr.tmpl != nil {
		return fr.tmpl
	}
	req := fasthttp.AcquireRequest()
	s.prepareFillRequest(req, fr.ctx, fr.o)
	fr.tmpl, fr.ctx = req, nil
	return req
}

// prepare is called before the status line of a response that will read
// the ranges rs (in order). It leases the body of an object that is not
// fetchable when it can, and otherwise probes every slice the ranges
// cover and makes the first one missing from the store readable (a fetch
// started and its answer checked). An error means the response cannot be
// promised: the request is a miss (or, for an origin failure, a 502/504).
func (r *sliceSource) prepare(rs []byterange.Range) error {
	i, end, err := r.lease(rs)
	switch {
	case err == nil:
		return nil
	case r.fetchable && errors.Is(err, errSliceMissing):
		// Fetch the slice the lease could not take (below).
	case err != errLeaseBudget:
		return err
	default:
		var ok bool
		if i, end, ok = r.firstMissing(rs); !ok {
			return nil
		}
		if !r.fetchable {
			return fmt.Errorf("%w: slice %d", errSliceMissing, i)
		}
	}
	if err := r.load(i, end); err != nil {
		return err
	}
	r.readAhead(-1, i, end, rs[0].Start == int64(i)*int64(r.obj.SliceSize)) // readahead.go
	if r.sf != nil && r.sf.digests {
		// The answer's headers prove nothing without a validator: wait
		// for the slice's bytes to match its digest.
		return r.sf.waitChecked(i)
	}
	return nil
}

// firstMissing returns the first slice the ranges rs cover that is
// neither leased nor held by the store, with the end of its range.
func (r *sliceSource) firstMissing(rs []byterange.Range) (idx int, end int64, ok bool) {
	sz := int64(r.obj.SliceSize)
	for _, rg := range rs {
		for i := int(rg.Start / sz); int64(i)*sz <= rg.End; i++ {
			if _, _, held := r.leased(i); held {
				continue
			}
			r.kbuf = sliceKey(r.kbuf[:0], r.key, i)
			if !r.s.store.Contains(r.kbuf) {
				return i, rg.End + 1, true
			}
		}
	}
	return 0, 0, false
}

// lease reads the slices the ranges rs cover, in the order they are
// sent, into slabs of r's own (a memory hit lends them: pinned, not
// copied). An object that cannot be fetched again has all of them leased
// or none: errLeaseBudget (nothing done) when they are more than
// FillWindow slices, errSliceMissing when one is not there. A fetchable
// object has its first FillWindow slices leased but those missing from
// the store: errSliceMissing names the first of these, which prepare
// fetches; errLeaseBudget says more slices follow, which prepare probes.
// So a body that fits the window is held whole before its status line
// (but for slices fetched), and any other has its first bytes held: a
// slice replaced by another version between a probe and its read can no
// longer end a response before its first byte. Its bytes (leaseBytes)
// were charged to MaxStreamBytes by acquireSlicedBody. With
// errSliceMissing come the slice missing and the end of the range that
// covers it.
func (r *sliceSource) lease(rs []byterange.Range) (missing int, end int64, err error) {
	n, whole := r.leaseBytes(rs)
	if n == 0 {
		return 0, 0, errLeaseBudget
	}
	sz := int64(r.obj.SliceSize)
	left := n / sz // slices still to lease
	missing = -1
	for _, rg := range rs {
		for i := int(rg.Start / sz); int64(i)*sz <= rg.End; i++ {
			if _, _, ok := r.leased(i); ok {
				continue
			}
			if left == 0 {
				break // a fetchable object's first slices are leased
			}
			left--
			if !r.fromStore(i) {
				if !r.fetchable {
					return i, rg.End + 1, fmt.Errorf("%w: slice %d", errSliceMissing, i)
				}
				if missing < 0 { // fetched by prepare; the rest are leased still
					missing, end = i, rg.End+1
				}
				continue
			}
			// Move the slice's Value into the next lease; r.val gets that
			// lease's old (released) Value and reuses its buffer.
			n := len(r.leases)
			if n == cap(r.leases) {
				r.leases = append(r.leases, leasedSlice{})
			}
			r.leases = r.leases[:n+1]
			l := &r.leases[n]
			l.idx, l.data, l.more = i, r.data, nil
			l.val.Swap(&r.val)
			if r.more != nil { // r.more was r.val's: take them from l.val now
				l.more = l.val.Spans()[1:]
			}
			r.data, r.more, r.idx = nil, nil, -1
			r.atPiece, r.atBase = 0, 0
		}
	}
	switch {
	case missing >= 0:
		return missing, end, fmt.Errorf("%w: slice %d", errSliceMissing, missing)
	case !whole:
		return 0, 0, errLeaseBudget // prepare probes the slices past the window
	}
	return 0, 0, nil
}

// leaseBytes returns the bytes lease holds for the ranges rs (sorted and
// coalesced, as byterange.Parse gives them): their slices, each counted
// once though two ranges share it, up to FillWindow of them; none for an
// object that cannot be fetched again and has more. whole: they are every
// slice the ranges cover.
func (r *sliceSource) leaseBytes(rs []byterange.Range) (n int64, whole bool) {
	sz := int64(r.obj.SliceSize)
	next := int64(0) // the first slice not counted yet
	for _, rg := range rs {
		first, last := max(rg.Start/sz, next), rg.End/sz
		if first <= last {
			n += (last - first + 1) * sz
			next = last + 1
		}
	}
	if window := int64(r.s.opts.FillWindow) * sz; n > window {
		if !r.fetchable {
			return 0, false
		}
		return window, false
	}
	return n, true
}

// leased returns the data of slice idx if it was leased (see data and
// more), else ok false.
func (r *sliceSource) leased(idx int) (data []byte, more [][]byte, ok bool) {
	for i := range r.leases {
		if l := &r.leases[i]; l.idx == idx {
			return l.data, l.more, true
		}
	}
	return nil, nil, false
}

// at returns the loaded slice's bytes from rel on, up to the end of the
// piece that holds rel; none past the slice's end. It starts from the
// piece it found last: a slice lent in ~740 pieces walked from the first
// piece at every call spent a quarter of a 256 MiB stream's CPU here.
func (r *sliceSource) at(rel int64) []byte {
	if rel < int64(len(r.data)) {
		return r.data[rel:]
	}
	rel -= int64(len(r.data))
	i, base := 0, int64(0)
	if rel >= r.atBase { // the usual case: rel only grows within a slice
		i, base = r.atPiece, r.atBase
	}
	for ; i < len(r.more); i++ {
		if p := r.more[i]; rel-base < int64(len(p)) {
			r.atPiece, r.atBase = i, base
			return p[rel-base:]
		}
		base += int64(len(r.more[i]))
	}
	return nil
}

func (r *sliceSource) readAt(p []byte, off, end int64) (int, error) {
	if err := r.seek(off, end); err != nil {
		return 0, err
	}
	var n int
	if r.data != nil {
		rel := off - int64(r.idx)*int64(r.obj.SliceSize)
		for n < len(p) {
			c := r.at(rel + int64(n))
			if len(c) == 0 {
				break
			}
			n += copy(p[n:], c)
		}
	} else {
		var err error
		if n, err = r.sf.readAt(p, off); err != nil {
			return n, err
		}
	}
	r.s.m.responseBytes.Add(float64(n))
	return n, nil
}

// lend returns the bytes from off up to end (exclusive) that the loaded
// slice holds, borrowed from r's store buffer until the next call, or
// nil when they come from a fetch (the caller uses readAt).
func (r *sliceSource) lend(off, end int64) ([]byte, error) {
	if err := r.seek(off, end); err != nil || r.data == nil {
		return nil, err
	}
	b := r.at(off - int64(r.idx)*int64(r.obj.SliceSize))
	b = b[:min(int64(len(b)), end-off)]
	r.s.m.responseBytes.Add(float64(len(b)))
	return b, nil
}

// seek makes the slice holding off readable.
func (r *sliceSource) seek(off, end int64) error {
	if idx := int(off / int64(r.obj.SliceSize)); idx != r.idx {
		prev := r.idx
		if err := r.load(idx, end); err != nil {
			return err
		}
		r.readAhead(prev, idx, end, prev < 0 && off == int64(idx)*int64(r.obj.SliceSize)) // readahead.go
		return nil
	}
	return nil
}

// load makes slice idx readable, from the store or from a fetch. A fetch
// held for slices ahead of idx (started by prepare) is kept until they
// are reached; one behind idx is let go.
func (r *sliceSource) load(idx int, end int64) error {
	r.idx, r.data, r.more = -1, nil, nil
	r.atPiece, r.atBase = 0, 0
	r.val.Release()
	if r.sf != nil {
		if r.sf.covers(idx) {
			r.idx = idx
			return nil
		}
		if r.sf.last < idx {
			r.dropFetch()
		}
	}
	if d, m, ok := r.leased(idx); ok {
		r.data, r.more, r.idx = d, m, idx
		r.atPiece, r.atBase = 0, 0
		return nil
	}
	limit := int((end - 1) / int64(r.obj.SliceSize))
	for range 2 {
		if r.fromStore(idx) {
			return nil
		}
		if !r.fetchable {
			return fmt.Errorf("%w: slice %d", errSliceMissing, idx)
		}
		r.dropFetch() // an ahead fetch lives on without us; its slices land in the store
		sf := r.s.acquireFetch(r.key, idx, limit, &r.fr, &r.buf)
		if sf == nil {
			continue // stored meanwhile
		}
		if err := r.useFetch(sf); err != nil {
			sf.release()
			return err
		}
		r.sf, r.idx = sf, idx
		return nil
	}
	return fmt.Errorf("%w: slice %d vanished from the store", ErrFillLagged, idx)
}

func (r *sliceSource) dropFetch() {
	if r.sf != nil {
		r.sf.release()
		r.sf = nil
	}
}

// fromStore loads slice idx from the store if it is there, intact and of
// the record's generation.
// A memory hit lends the slice's bytes (Store.Lend): they go to the socket
// without a copy, pinned until the next slice or close.
func (r *sliceSource) fromStore(idx int) bool {
	r.kbuf = sliceKey(r.kbuf[:0], r.key, idx)
	if _, ok := r.s.store.Lend(r.kbuf, &r.val); !ok {
		return false
	}
	var first []byte
	var more [][]byte
	if sp := r.val.Spans(); len(sp) > 1 && len(sp[0]) >= sliceHeaderLen {
		// Lent in pieces: sent as they are, not joined (a copy of up to a
		// slice, a fifth of a 256 MiB stream's CPU).
		first, more = sp[0], sp[1:]
	} else {
		first = r.val.Bytes()
	}
	data, err := decodeSliceHead(first, r.val.Len(), r.obj.Gen, idx, r.obj.sliceLen(idx))
	if err != nil {
		r.val.Release()
		return false
	}
	r.data, r.more, r.idx = data, more, idx
	r.atPiece, r.atBase = 0, 0
	return true
}

// useFetch waits for sf's answer and checks it is the record's
// representation.
func (r *sliceSource) useFetch(sf *sliceFetch) error {
	state, err := sf.waitHeaders()
	switch state {
	case fetchFailed:
		return err
	case fetchRedirect:
		return errRangeIgnored
	case fetchPrivate:
		return errNoValidator
	}
	if sf.obj.BodyLen != r.obj.BodyLen || sf.obj.SliceSize != r.obj.SliceSize || !sameRepresentation(&sf.obj, &r.obj) {
		return errChanged
	}
	return nil
}

// adopt makes a fetch the caller already holds (with its reference) the
// source of slice idx.
func (r *sliceSource) adopt(sf *sliceFetch, idx int) {
	r.sf, r.idx = sf, idx
}

func (r *sliceSource) close() {
	r.dropFetch()
	putSlab(r.buf)
	r.buf, r.data, r.more = nil, nil, nil
	r.val.Release()
	r.val.Trim(maxPooledValue)
	for i := range r.leases {
		l := &r.leases[i]
		l.val.Release()
		l.val.Trim(maxPooledValue)
		l.data, l.more = nil, nil
	}
	r.leases = r.leases[:0]
	if r.fr.tmpl != nil {
		fasthttp.ReleaseRequest(r.fr.tmpl)
		r.fr.tmpl = nil
	}
	r.fr.ctx = nil
	r.fr.rec, r.s = nil, nil
}

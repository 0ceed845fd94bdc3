package proxy

import (
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"
)

// errRangeIgnored: a slice fetch found the origin answering 200 to a
// Range request; the whole object is being filled instead.
var errRangeIgnored = errors.New("proxy: origin ignores Range")

// sliceSource reads a sliced (possibly partial) object at increasing
// offsets: each slice from the store, checked against the record's
// generation; a slice that is missing (never fetched, evicted, of another
// generation) comes from a slice fetch, joined if one is in flight,
// started for the run of missing slices up to the end of the range being
// served otherwise. A fetch whose response names another validator than
// the record's fails the read with errChanged: bytes of two versions are
// never mixed in one response.
//
// It owns a copy of the record, the origin request template and one
// slice buffer; close releases them and any fetch it holds.
type sliceSource struct {
	s    *Server
	key  []byte
	rec  []byte
	obj  object // borrows rec
	fr   fetchReq
	idx  int    // slice loaded, -1 none
	buf  []byte // store read buffer
	data []byte // slice idx from the store, when not from sf
	sf   *sliceFetch
}

// newSliceSource builds a source for the object of st.obj. rec is the
// record encoding (owned by the source from now on).
func (s *Server) newSliceSource(key, rec []byte, fr fetchReq) (*sliceSource, error) {
	r := &sliceSource{s: s, key: append([]byte(nil), key...), rec: rec, fr: fr, idx: -1}
	if err := decodeObject(&r.obj, rec); err != nil {
		return nil, err
	}
	r.fr.rec = &r.obj
	return r, nil
}

// fetchRequest builds the template of the Range requests slice fetches
// send for this client request: the client's headers, minus conditionals
// and Range, as a GET prepared for o.
func (s *Server) fetchRequest(ctx *fasthttp.RequestCtx, o *origin, rp *RequestPolicy) fetchReq {
	req := fasthttp.AcquireRequest()
	ctx.Request.Header.CopyTo(&req.Header)
	for _, h := range fillDropped {
		req.Header.DelBytes(h)
	}
	req.Header.DelBytes(hdrContentLength)
	req.Header.SetMethod(fasthttp.MethodGet)
	s.prepareOriginRequest(req, ctx, o)
	return fetchReq{o: o, tmpl: req, rp: *rp}
}

func (r *sliceSource) readAt(p []byte, off, end int64) (int, error) {
	sz := int64(r.obj.SliceSize)
	idx := int(off / sz)
	if idx != r.idx {
		if err := r.load(idx, end); err != nil {
			return 0, err
		}
	}
	var n int
	if r.sf == nil {
		n = copy(p, r.data[off-int64(idx)*sz:])
	} else {
		var err error
		if n, err = r.sf.readAt(p, off); err != nil {
			return n, err
		}
	}
	r.s.m.responseBytes.Add(float64(n))
	return n, nil
}

// load makes slice idx readable, from the store or from a fetch.
func (r *sliceSource) load(idx int, end int64) error {
	r.idx, r.data = -1, nil
	if r.sf != nil {
		if r.sf.covers(idx) {
			r.idx = idx
			return nil
		}
		r.sf.release()
		r.sf = nil
	}
	limit := int((end - 1) / int64(r.obj.SliceSize))
	for range 2 {
		if r.fromStore(idx) {
			return nil
		}
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

// fromStore loads slice idx from the store if it is there, intact and of
// the record's generation.
func (r *sliceSource) fromStore(idx int) bool {
	var kb [256]byte
	if r.buf == nil {
		r.buf = getSlab(sliceHeaderLen + r.obj.SliceSize)
	}
	v, _, ok := r.s.store.Get(sliceKey(kb[:0], r.key, idx), r.buf[:0])
	r.buf = v[:0]
	if !ok {
		return false
	}
	data, err := decodeSlice(v, r.obj.Gen, idx, r.obj.sliceLen(idx))
	if err != nil {
		return false
	}
	r.buf, r.data, r.idx = v, data, idx
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
	}
	if sf.obj.BodyLen != r.obj.BodyLen || sf.obj.SliceSize != r.obj.SliceSize || !sameValidator(&sf.obj, &r.obj) {
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
	if r.sf != nil {
		r.sf.release()
		r.sf = nil
	}
	putSlab(r.buf)
	r.buf, r.data = nil, nil
	if r.fr.tmpl != nil {
		fasthttp.ReleaseRequest(r.fr.tmpl)
		r.fr.tmpl = nil
	}
}

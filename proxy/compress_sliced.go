package proxy

import (
	"io"
	"math/rand/v2"
	"time"

	"strata/proxy/internal/httpcache"
)

// Compressing sliced bodies (compress.go has the rest of compression at
// the edge).
//
// A compressible body longer than one slice, up to CompressOptions.MaxSize,
// is compressed once after its fill commits, as a one-record body is, but
// as one stream: the compression goroutine reads the committed identity
// slices back from the store one at a time, each checked against the
// record's generation, and passes each on three ways: as it is under the
// identity variant's key, and through a gzip and a brotli writer whose
// output is cut into slices of SliceSize under the gzip and br variants'
// keys (sliceWriter). Each representation then is an ordinary object, a
// record plus slices (or one inline record, when a coding's output fits
// one slice), under its variant key, so ranges (of its own bytes), HEAD,
// multipart ranges, conditionals, revalidation, purge and eviction work
// as for any stored object. Order, as for a fill: every slice of every
// representation, then their records, then the index that leads to them
// (publishEdgeIndex, written only if the URL's key still holds the record
// the fill committed).
//
// Reading back rather than compressing the fill's bytes as they pass
// keeps the fill's pump, its clients and its memory as they are: the
// compression runs on a slot of its own after the commit, and the slices
// it reads are still in the memory tier in the common case.
//
// Memory: the slice read back and one output slice per coding (three
// SliceSize buffers), plus the writers' state (a brotli writer's window
// is at most 4 MiB), whatever the body's length. MaxSize bounds the CPU
// time a body takes and so how long it holds a compression slot; at most
// one slot runs a sliced body.
//
// Correctness:
//   - The compressed records are edge-coded (flagEdgeCoded): a slice of
//     them lost from the store is never fetched from the origin, whose
//     Range answers are identity bytes; the request is a miss, and the
//     fill that follows stores the URL again, to be compressed again.
//     The identity variant keeps the origin's validator (and slice
//     digests): its lost slices are fetched as any object's.
//   - Versions: a slice read back that is missing or of another
//     generation (a newer fill of the URL wrote over it) stops the job,
//     and the index goes in only in place of the very record the fill
//     committed: bytes of two versions are never joined, in one
//     representation or across them.
//   - Both codings must save a tenth: otherwise the URL keeps its
//     identity record (no index, no Vary, no copies), where a one-record
//     body stores identity bytes under a coding that does not pay.
//   - Before the records go in, every slice written is probed in the
//     store (Contains): one the store dropped leaves the identity record
//     in place. A job that stops removes the slices it wrote (nothing
//     could reach them); the identity slices under the URL's key, which
//     the index makes unreachable, are left to age out as a replaced
//     object's are, since clients may still be reading them.

// storeCompressedSliced stores the three representations of j's sliced
// body and the index that leads to them (see above).
func (s *Server) storeCompressedSliced(j *compressJob) {
	x := variantIndex{Epoch: rand.Uint64(), Vary: httpcache.HeaderAcceptEncoding}
	var reps [len(edgeCodings)]sliceWriter
	for i, c := range edgeCodings {
		vk := edgeVaryKey(c.name)
		x.Keys = append(x.Keys, vk)
		reps[i].init(s, variantKey(nil, j.pkey, x.Epoch, vk), j.expiry)
		defer reps[i].close()
	}
	ok := s.compressSlices(j, &reps)
	for i := 1; ok && i < len(reps); i++ {
		ok = reps[i].total <= j.obj.BodyLen-j.obj.BodyLen/10
	}
	for i := range reps {
		ok = ok && reps[i].stored()
	}
	if !ok {
		for i := range reps {
			reps[i].discard()
		}
		s.cz.abandoned.Inc()
		return
	}
	idHeaders := varyHeaders(j.obj.Headers)
	for i, c := range edgeCodings {
		o := j.obj
		o.Gen, o.Vary, o.VariantKey, o.Headers = reps[i].gen, x.Vary, x.Keys[i], idHeaders
		if i > 0 {
			o.BodyLen, o.Body, o.Digests, o.EdgeCoded = reps[i].total, reps[i].inline(), nil, true
			o.Headers, o.ETag = compressedHeaders(idHeaders, c.name, c.suffix)
			s.cz.count(i, j.obj.BodyLen, o.BodyLen)
		}
		s.store.Insert(metaKey(nil, reps[i].key), appendObject(nil, &o), j.expiry)
		s.recordTags(reps[i].key, &o)
	}
	s.publishEdgeIndex(j, &x)
}

// compressSlices reads j's identity slices back from the store and writes
// them to reps: as they are to reps[0], compressed to the others. It
// reports false when a slice is missing or not of j's generation, or the
// Server closes.
func (s *Server) compressSlices(j *compressJob, reps *[len(edgeCodings)]sliceWriter) bool {
	var zs [len(edgeCodings) - 1]io.WriteCloser
	for i := range zs {
		zs[i] = s.cz.writer(edgeCodings[i+1].name, &reps[i+1])
	}
	buf := getSlab(sliceHeaderLen + s.opts.SliceSize)
	ok := true
	for i := range j.obj.slices() {
		reps[0].kb = sliceKey(reps[0].kb[:0], j.pkey, i)
		var v []byte
		v, _, ok = s.store.Get(reps[0].kb, buf[:0])
		buf = v[:0]
		if !ok || s.life.Err() != nil {
			ok = false
			break
		}
		data, err := decodeSlice(v, j.obj.Gen, i, j.obj.sliceLen(i))
		if ok = err == nil; !ok {
			break
		}
		for _, z := range zs {
			_, _ = z.Write(data) // a sliceWriter does not fail
		}
		reps[0].total += int64(len(data))
		reps[0].insert(v) // after the writers: it rewrites v's header
	}
	putSlab(buf)
	for i, z := range zs {
		reps[i+1].stop = !ok
		_ = z.Close()
		s.cz.put(z)
		if ok {
			reps[i+1].finish()
		}
	}
	return ok
}

// sliceWriter writes one representation's body as the slices of an
// object of its own under key (generation gen), as its bytes come: a
// slice is inserted once it is full and more bytes follow, so that a body
// that fits one slice stays in buf for an inline record (inline). One
// goroutine uses it.
type sliceWriter struct {
	s       *Server
	key     []byte // object key
	gen     uint64
	expiry  time.Time
	buf     []byte // header room + the bytes of slice n (Write only)
	n       int    // slices inserted
	total   int64  // body bytes written
	stop    bool   // insert nothing more (the job stopped)
	unpaced bool   // see fill.unpaced
	kb      []byte // slice keys
}

func (w *sliceWriter) init(s *Server, key []byte, expiry time.Time) {
	*w = sliceWriter{s: s, key: key, gen: rand.Uint64(), expiry: expiry}
}

// Write appends p to the body.
func (w *sliceWriter) Write(p []byte) (int, error) {
	full := sliceHeaderLen + w.s.opts.SliceSize
	if w.buf == nil {
		w.buf = appendSliceRoom(getSlab(full))
	}
	n := len(p)
	for len(p) > 0 {
		if len(w.buf) == full {
			w.insert(w.buf)
			w.buf = w.buf[:sliceHeaderLen]
		}
		k := copy(w.buf[len(w.buf):full], p)
		w.buf, p = w.buf[:len(w.buf)+k], p[k:]
		w.total += int64(k)
	}
	return n, nil
}

// insert stores b (header room + the data of slice n) as slice n,
// writing its header into b, and counts it.
func (w *sliceWriter) insert(b []byte) {
	if !w.stop {
		appendSliceHeader(b[:0], w.gen, w.n, b[sliceHeaderLen:])
		paced(w.s.store, len(b), &w.unpaced)
		w.kb = sliceKey(w.kb[:0], w.key, w.n)
		w.s.store.Insert(w.kb, b, w.expiry)
	}
	w.n++
}

// finish inserts the last slice of a sliced body.
func (w *sliceWriter) finish() {
	if w.total > int64(w.s.opts.SliceSize) && len(w.buf) > sliceHeaderLen {
		w.insert(w.buf)
		w.buf = w.buf[:sliceHeaderLen]
	}
}

// inline returns the body when it fits one slice (the record holds it),
// else nil.
func (w *sliceWriter) inline() []byte {
	if w.total > int64(w.s.opts.SliceSize) || w.total == 0 {
		return nil
	}
	return w.buf[sliceHeaderLen:]
}

// stored reports whether every slice inserted is in the store.
func (w *sliceWriter) stored() bool {
	for i := range w.n {
		w.kb = sliceKey(w.kb[:0], w.key, i)
		if !w.s.store.Contains(w.kb) {
			return false
		}
	}
	return true
}

// discard removes the slices inserted.
func (w *sliceWriter) discard() {
	for i := range w.n {
		w.kb = sliceKey(w.kb[:0], w.key, i)
		w.s.store.Remove(w.kb)
	}
	w.n, w.stop = 0, true
}

func (w *sliceWriter) close() {
	putSlab(w.buf)
	w.buf = nil
}

// edgeCodedLost is told that a slice of the edge-coded representation in
// st (sliced) is gone from the store: nothing can fetch it again, so the
// representation is removed and the request misses without it (no
// conditional request on its behalf, whose 304 would store it again): the
// fill that follows stores the URL afresh, to be compressed again.
func (s *Server) edgeCodedLost(st *reqState) {
	s.removeObject(st.key)
	st.have = false
}

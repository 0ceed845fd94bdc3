package proxy

import (
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// fillReader streams a shared fill's body to one client. fasthttp calls
// Read from the connection's goroutine after the handler returned, and
// Close when the response is written or the client went away.
type fillReader struct {
	f       *fill
	pos     int64
	scratch []byte // a slice read back from the store, when behind the window
	scIdx   int    // which slice scratch holds, -1 none
	closed  bool
	// lent is the window buffer WriteTo is writing from (lend), nil when
	// none; ownsLent: the fill replaced that buffer in its slot meanwhile
	// (disown) and the reader returns it to the pool. Guarded by f.mu.
	lent     []byte
	ownsLent bool
	// detached: the fill stopped waiting for this reader (it held a
	// stored fill back for FillLagWait). Guarded by f.mu.
	detached bool
	// ctx and org let a reader that fell behind go on from the committed
	// record (resume); src is that record's source once it did.
	ctx *fasthttp.RequestCtx
	org *origin
	src *sliceSource
}

// newReader registers a reader at position 0, converting the caller's
// reference; nil (reference dropped) if the body's start is gone and not
// in the store.
func (f *fill) newReader() *fillReader {
	f.mu.Lock()
	if !f.storing && f.slotIdx[0] != 0 {
		f.mu.Unlock()
		f.release()
		return nil
	}
	r := f.addReader(0)
	f.mu.Unlock()
	return r
}

// Read implements io.Reader. A fill failure is returned as the error, so
// fasthttp closes the client connection without completing the body.
func (r *fillReader) Read(p []byte) (int, error) {
	if r.src != nil {
		return r.resume(p)
	}
	f := r.f
	sz := int64(f.s.opts.SliceSize)
	f.mu.Lock()
	if err := r.waitData(); err != nil {
		f.mu.Unlock()
		return 0, err
	}
	idx, off := int(r.pos/sz), int(r.pos%sz)
	slot := idx % len(f.window)
	if f.slotIdx[slot] == idx {
		n := copy(p, f.window[slot][sliceHeaderLen+off:])
		r.advance(n)
		f.mu.Unlock()
		return n, nil
	}
	f.mu.Unlock()
	return r.readStored(p, idx, off)
}

// waitData waits until the byte at r.pos may be read: nil then, io.EOF
// at the end of the body, the fill's error once it failed.
// REQUIRES: f.mu held.
func (r *fillReader) waitData() error {
	f := r.f
	for {
		switch {
		case f.err != nil:
			return f.err
		case r.pos < f.visible():
			return nil
		case f.done:
			return io.EOF
		}
		f.cond.Wait()
	}
}

// WriteTo implements io.WriterTo, which fasthttp's copy of a body stream
// of known length prefers to Read: bytes in the fill's window go to w
// (fasthttp's buffered connection writer, which passes a write at least
// its buffer's size straight to the socket) without a copy into a buffer
// of fasthttp's, up to a slice at a time instead of 32 KiB reads. Bytes
// lend cannot lend (behind the window, or in a buffer still growing) go
// through Read and a buffer of its own.
func (r *fillReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	var buf []byte
	defer func() { putSlab(buf) }()
	for {
		b, lent, err := r.lend()
		if !lent && err == nil {
			if buf == nil {
				buf = getSlab(writeToBuf)[:writeToBuf]
			}
			var n int
			n, err = r.Read(buf)
			b = buf[:n]
		}
		var n int
		var werr error
		if len(b) > 0 {
			n, werr = w.Write(b)
			total += int64(n)
		}
		if lent {
			r.giveBack(n)
		}
		if werr != nil {
			return total, werr
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// writeToBuf is the size of WriteTo's buffer for what lend cannot lend.
const writeToBuf = 64 << 10

// lend waits for the byte at r.pos and lends the received bytes from there
// to the end of their slice, straight from the window (lent true): the
// caller writes them out, then calls giveBack, and the fill neither moves
// r past them nor reuses their buffer meanwhile (a detached reader's
// buffer is left to it: disown). lent is false, with no error, when the
// bytes are not in a window buffer of full size (behind the window, or in
// a buffer the fill may still grow and free): Read serves them.
func (r *fillReader) lend() (b []byte, lent bool, err error) {
	if r.src != nil {
		return nil, false, nil
	}
	f := r.f
	sz := int64(f.s.opts.SliceSize)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := r.waitData(); err != nil {
		return nil, false, err
	}
	idx, off := int(r.pos/sz), int(r.pos%sz)
	slot := idx % len(f.window)
	buf := f.window[slot]
	if f.slotIdx[slot] != idx || cap(buf) < sliceHeaderLen+int(sz) {
		return nil, false, nil
	}
	end := min(len(buf), sliceHeaderLen+int(f.visible()-int64(idx)*sz))
	r.lent = buf
	return buf[sliceHeaderLen+off : end], true, nil
}

// giveBack ends a lend of which n bytes were written. A buffer the reader
// owns (disown) that another detached reader still writes from passes to
// that reader instead of going back to the pool.
func (r *fillReader) giveBack(n int) {
	f := r.f
	f.mu.Lock()
	buf, own := r.lent, r.ownsLent
	r.lent, r.ownsLent = nil, false
	r.advance(n)
	if own {
		for _, x := range f.readers {
			if len(x.lent) > 0 && &x.lent[0] == &buf[0] {
				x.ownsLent, own = true, false
				break
			}
		}
	}
	f.mu.Unlock()
	if own {
		putSlab(buf)
	}
}

// disown makes slot's buffer, which the fill is about to reuse, the
// property of a reader still writing from it (lend), and gives the slot a
// fresh one. Only a detached reader can be such a reader: the fill reuses
// a slot only once every other reader is past its slice. Several may
// write from it: the owner hands it on to another when done (giveBack).
// REQUIRES: f.mu held.
func (f *fill) disown(slot int) {
	buf := f.window[slot]
	if len(buf) == 0 {
		return
	}
	for _, r := range f.readers {
		if len(r.lent) > 0 && &r.lent[0] == &buf[0] {
			r.ownsLent = true
			f.window[slot] = nil
			return
		}
	}
}

// visible is how far readers may read: everything received, except that
// the last byte of a body with a declared length is held back until the
// fill has committed. A client that has the whole body then finds the
// object in the store on its next request, instead of racing the commit
// (and joining a fill that is about to end). REQUIRES: f.mu held.
func (f *fill) visible() int64 {
	if !f.done && f.declared > 0 && f.received >= f.declared {
		return f.declared - 1
	}
	return f.received
}

// advance moves the reader on. REQUIRES: f.mu held.
func (r *fillReader) advance(n int) {
	r.pos += int64(n)
	r.f.s.m.responseBytes.Add(float64(n))
	if r.f.waiting {
		r.f.waiting = false
		r.f.cond.Broadcast()
	}
}

// readStored serves slice idx, which left the window, from the store.
func (r *fillReader) readStored(p []byte, idx, off int) (int, error) {
	f := r.f
	if r.scIdx != idx {
		var kb [256]byte
		if r.scratch == nil {
			r.scratch = getSlab(sliceHeaderLen + f.s.opts.SliceSize)
		}
		v, _, ok := f.s.store.Get(sliceKey(kb[:0], f.skey, idx), r.scratch[:0])
		r.scratch = v[:0]
		data, err := decodeSlice(v, f.obj.Gen, idx, f.s.opts.SliceSize)
		if !ok || err != nil {
			return r.resume(p)
		}
		r.scratch, r.scIdx = v, idx
		_ = data
	}
	n := copy(p, r.scratch[sliceHeaderLen+off:])
	f.mu.Lock()
	r.advance(n)
	f.mu.Unlock()
	return n, nil
}

// withClient lets r go on from the committed record when it falls behind:
// ctx is the client request r's body answers (valid until fasthttp has
// written the response, when it closes r), org its origin.
func (r *fillReader) withClient(ctx *fasthttp.RequestCtx, org *origin) *fillReader {
	r.ctx, r.org = ctx, org
	return r
}

var errNoRecord = errors.New("proxy: the fill's record is not in the store")

// resume reads on at r.pos from the fill's committed record, for a reader
// whose slice left the window and is not in the store (dropped by
// admission or the disk's write queue, evicted): it waits, no longer
// holding the fill back, for the fill to commit, then reads the record's
// slices from the store and fetches missing ones with Range requests
// checked against the record's validator or slice digests
// (slice_digest.go), as a stored hit does. Only when that cannot be done
// (the fill failed or was not stored, the record changed or was evicted
// meanwhile, the object has neither validator nor digests, the origin
// fails or changes) does the client get ErrFillLagged, counted, and a
// closed connection.
func (r *fillReader) resume(p []byte) (int, error) {
	f := r.f
	if r.src == nil {
		if err := r.openRecord(); err != nil {
			f.s.m.fillLagged.Inc()
			return 0, fmt.Errorf("%w: %v", ErrFillLagged, err)
		}
	}
	if r.pos >= r.src.obj.BodyLen {
		return 0, io.EOF
	}
	n, err := r.src.readAt(p, r.pos, r.src.obj.BodyLen)
	if err != nil {
		f.s.m.fillLagged.Inc()
		return n, fmt.Errorf("%w: %v", ErrFillLagged, err)
	}
	f.mu.Lock()
	r.pos += int64(n) // readAt counted the bytes served
	f.mu.Unlock()
	if r.pos >= r.src.obj.BodyLen {
		return n, io.EOF
	}
	return n, nil
}

// openRecord waits for the fill to commit and opens a source on its record.
func (r *fillReader) openRecord() error {
	f := r.f
	f.mu.Lock()
	if !r.detached {
		r.detached = true
		f.cond.Broadcast() // the fill may be waiting for us
	}
	for !f.done && f.err == nil {
		f.cond.Wait()
	}
	err := f.err
	f.mu.Unlock()
	switch {
	case err != nil:
		return err
	case r.ctx == nil:
		return errNoRecord
	}
	// The record the fill committed describes the slices; when it is gone
	// (purged, refused by the store) or is no record any more (a
	// compression index put in its place: compress_sliced.go), the fill's
	// own object still does: its slices carry their generation, and a
	// missing one is fetched with the fill's validators. A newer version's
	// record ends this response instead: fetching the old version's
	// slices again would store them over the new one's.
	var kb [256]byte
	rec, _, ok := f.s.store.Get(metaKey(kb[:0], f.skey), nil)
	var o object
	if !ok || decodeObject(&o, rec) != nil {
		f.mu.Lock()
		o = f.obj
		f.mu.Unlock()
	}
	if o.Gen != f.obj.Gen || !o.refetchable() {
		return errNoRecord
	}
	f.mu.Lock()
	f.noPool = true // the slice source borrows the fill's key (and maybe its object) past the last release
	f.mu.Unlock()
	src := new(sliceSource)
	if err := src.init(f.s, f.skey, &o, lazyFetchRequest(r.ctx, r.org, &httpcache.RequestPolicy{})); err != nil {
		src.close()
		return err
	}
	r.src = src
	return nil
}

// Close unregisters the reader and drops its reference to the fill.
func (r *fillReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	f := r.f
	f.mu.Lock()
	for i, x := range f.readers {
		if x == r {
			f.readers = append(f.readers[:i], f.readers[i+1:]...)
			break
		}
	}
	if f.waiting {
		f.waiting = false
		f.cond.Broadcast()
	}
	f.mu.Unlock()
	putSlab(r.scratch)
	r.scratch = nil
	if r.src != nil {
		r.src.close()
		r.src = nil
	}
	r.ctx, r.org = nil, nil
	f.release()
	return nil
}

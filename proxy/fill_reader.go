package proxy

import (
	"io"
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
	// detached: the fill stopped waiting for this reader (it held a
	// stored fill back for FillLagWait). Guarded by f.mu.
	detached bool
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
	r := &fillReader{f: f, scIdx: -1}
	f.readers = append(f.readers, r)
	f.mu.Unlock()
	return r
}

// Read implements io.Reader. A fill failure is returned as the error, so
// fasthttp closes the client connection without completing the body.
func (r *fillReader) Read(p []byte) (int, error) {
	f := r.f
	sz := int64(f.s.opts.SliceSize)
	f.mu.Lock()
	for {
		if f.err != nil {
			err := f.err
			f.mu.Unlock()
			return 0, err
		}
		if r.pos < f.visible() {
			break
		}
		if f.done {
			f.mu.Unlock()
			return 0, io.EOF
		}
		f.cond.Wait()
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
			f.s.m.fillLagged.Inc()
			return 0, ErrFillLagged
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
	f.release()
	return nil
}

package proxy

import (
	"fmt"
	"io"
	"sync"

	"github.com/valyala/fasthttp"
)

// sliceReader streams a stored sliced body, one slice at a time, each read
// from the store into a pooled buffer and checked (version, generation,
// index, length) before a byte of it is sent. A slice found missing or
// corrupt mid-body ends the response with an error, so fasthttp closes the
// connection, and the record is removed so that the next request refills
// the object. (Issue 6: fetch the missing slice from the origin with a
// Range request instead.)
type sliceReader struct {
	s       *Server
	key     []byte // object key, owned
	gen     uint64
	bodyLen int64
	sliceSz int
	next    int    // next slice to load
	buf     []byte // loaded slice entry
	data    []byte // unread bytes of the loaded slice
	kbuf    []byte // slice key; kept with the pooled reader (a stack array would escape through Store.Get)
}

var sliceReaderPool = sync.Pool{New: func() any { return &sliceReader{} }}

// openSlices loads the first slice of o; nil if it is missing or corrupt
// (then the request is a miss).
func (s *Server) openSlices(key []byte, o *object) *sliceReader {
	r := sliceReaderPool.Get().(*sliceReader)
	*r = sliceReader{s: s, key: append(r.key[:0], key...), gen: o.Gen, bodyLen: o.BodyLen,
		sliceSz: o.SliceSize, buf: r.buf, kbuf: r.kbuf}
	if err := r.load(); err != nil {
		r.release()
		return nil
	}
	return r
}

func (r *sliceReader) load() error {
	if r.buf == nil {
		r.buf = getSlab(sliceHeaderLen + r.sliceSz)
	}
	r.kbuf = sliceKey(r.kbuf[:0], r.key, r.next)
	v, _, ok := r.s.store.Get(r.kbuf, r.buf[:0])
	r.buf = v[:0]
	if !ok {
		return fmt.Errorf("%w: slice %d missing", ErrCorrupt, r.next)
	}
	want := int(min(int64(r.sliceSz), r.bodyLen-int64(r.next)*int64(r.sliceSz)))
	data, err := decodeSlice(v, r.gen, r.next, want)
	if err != nil {
		return err
	}
	r.buf, r.data = v, data
	r.next++
	return nil
}

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		if err := r.advance(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	r.s.m.responseBytes.Add(float64(n))
	return n, nil
}

// WriteTo hands each loaded slice to w whole: fasthttp's bufio.Writer
// passes a write larger than its buffer straight to the connection, so a
// slice costs no copy and few syscalls (Read through fasthttp's 4 KiB copy
// buffer cost a copy and a write per 4 KiB: issue 7's scenario 5). Same
// accounting and error handling as Read.
func (r *sliceReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(r.data) > 0 {
			n, err := w.Write(r.data)
			r.data = r.data[n:]
			total += int64(n)
			r.s.m.responseBytes.Add(float64(n))
			if err != nil {
				return total, err
			}
			if len(r.data) > 0 {
				return total, io.ErrShortWrite
			}
		}
		if err := r.advance(); err != nil {
			if err == io.EOF {
				return total, nil
			}
			return total, err
		}
	}
}

// SupportsBodyWriteTo tells fasthttp that WriteTo may replace Read.
func (r *sliceReader) SupportsBodyWriteTo() bool { return true }

// advance loads the next slice, or returns io.EOF after the last one. A
// missing or corrupt slice removes the record (the next request refills).
func (r *sliceReader) advance() error {
	if int64(r.next)*int64(r.sliceSz) >= r.bodyLen {
		return io.EOF
	}
	if err := r.load(); err != nil {
		r.s.m.corrupt.Inc()
		var kb [256]byte
		r.s.store.Remove(metaKey(kb[:0], r.key))
		return err
	}
	return nil
}

// Close returns the reader to its pool.
func (r *sliceReader) Close() error {
	r.release()
	return nil
}

func (r *sliceReader) release() {
	putSlab(r.buf)
	*r = sliceReader{key: r.key[:0], kbuf: r.kbuf[:0]}
	sliceReaderPool.Put(r)
}

var _ fasthttp.BodyWriterTo = (*sliceReader)(nil)

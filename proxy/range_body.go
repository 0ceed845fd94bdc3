package proxy

import (
	"fmt"
	"io"
)

// rangeSource gives the bytes of one representation by offset. readAt is
// called with offsets that never decrease; end is the exclusive end of
// the range being served (a bound for read-ahead) and p never reaches
// past it. It returns at least one byte or an error.
type rangeSource interface {
	readAt(p []byte, off, end int64) (int, error)
	close()
}

// rangeBody streams the body of a 206 (one range: its bytes; several:
// multipart/byteranges framing around them, RFC 9110 §14.6) or of a 200
// (ranges = the whole representation) from a rangeSource. Its length is
// exactly what rangeLength says. fasthttp calls Read after the handler
// returned and Close at the end; a source error is returned from Read,
// which makes fasthttp close the connection short of Content-Length.
type rangeBody struct {
	src      rangeSource
	ranges   []ByteRange
	multi    bool
	boundary []byte
	ctype    []byte
	size     int64
	i        int   // range being served
	pos      int64 // next offset of ranges[i]
	opened   bool  // ranges[i] started (its part header queued)
	ended    bool  // the close delimiter was queued
	frame    []byte
	pend     []byte // framing not yet read
}

// rangeLength is the Content-Length of a rangeBody.
func rangeLength(ranges []ByteRange, multi bool, boundary, ctype []byte, size int64) int64 {
	if multi {
		return MultipartLength(ranges, boundary, ctype, size)
	}
	var n int64
	for _, r := range ranges {
		n += r.Len()
	}
	return n
}

func (b *rangeBody) Read(p []byte) (int, error) {
	for {
		if len(b.pend) > 0 {
			n := copy(p, b.pend)
			b.pend = b.pend[n:]
			return n, nil
		}
		if b.i == len(b.ranges) {
			if b.multi && !b.ended {
				b.ended = true
				b.frame = AppendPartsEnd(b.frame[:0], b.boundary)
				b.pend = b.frame
				continue
			}
			return 0, io.EOF
		}
		r := b.ranges[b.i]
		if !b.opened {
			b.opened, b.pos = true, r.Start
			if b.multi {
				b.frame = AppendPartHeader(b.frame[:0], b.i == 0, b.boundary, b.ctype, r, b.size)
				b.pend = b.frame
				continue
			}
		}
		if b.pos > r.End {
			b.i++
			b.opened = false
			continue
		}
		lim := min(int64(len(p)), r.End+1-b.pos)
		n, err := b.src.readAt(p[:lim], b.pos, r.End+1)
		b.pos += int64(n)
		if err != nil || n > 0 {
			return n, err
		}
		return 0, fmt.Errorf("%w: source returned nothing at %d", ErrTruncated, b.pos)
	}
}

// Close releases the source.
func (b *rangeBody) Close() error {
	if b.src != nil {
		b.src.close()
		b.src = nil
	}
	return nil
}

// fillSource reads a shared whole-object fill at increasing offsets.
type fillSource struct{ r *fillReader }

// newReaderAt registers a reader of f at pos, converting the caller's
// reference; nil (reference dropped) when the fill does not store the
// object, so that its window may have left pos behind.
func (f *fill) newReaderAt(pos int64) *fillReader {
	f.mu.Lock()
	if !f.storing {
		f.mu.Unlock()
		f.release()
		return nil
	}
	r := &fillReader{f: f, scIdx: -1, pos: pos}
	f.readers = append(f.readers, r)
	f.mu.Unlock()
	return r
}

func (fs *fillSource) readAt(p []byte, off, _ int64) (int, error) {
	r := fs.r
	if off != r.pos {
		r.f.mu.Lock()
		r.pos = max(r.pos, off)
		r.f.mu.Unlock()
	}
	n, err := r.Read(p)
	if err == io.EOF {
		err = fmt.Errorf("%w: fill ended at %d", ErrTruncated, r.pos)
	}
	return n, err
}

func (fs *fillSource) close() { _ = fs.r.Close() }

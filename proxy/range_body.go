package proxy

import (
	"errors"
	"fmt"
	"io"
	"unsafe"

	"strata/proxy/internal/byterange"
)

// rangeSource gives the bytes of one representation by offset. readAt is
// called with offsets that never decrease; end is the exclusive end of
// the range being served (a bound for read-ahead) and p never reaches
// past it. It returns at least one byte or an error.
type rangeSource interface {
	readAt(p []byte, off, end int64) (int, error)
	// lend returns the bytes at off (up to end, at least one) borrowed
	// until the next call, or nil when the source cannot lend them (the
	// caller then copies with readAt).
	lend(off, end int64) ([]byte, error)
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
	ranges   []byterange.Range
	multi    bool
	boundary []byte
	ctype    []byte
	size     int64
	i        int   // range being served
	pos      int64 // next offset of ranges[i]
	opened   bool  // ranges[i] started (its part header queued)
	ended    bool  // the close delimiter was queued
	frame    []byte
	pend     []byte   // framing not yet read
	m        *metrics // counts a body cut short; nil: not counted
}

// rangeLength is the Content-Length of a rangeBody.
func rangeLength(ranges []byterange.Range, multi bool, boundary, ctype []byte, size int64) int64 {
	if multi {
		return byterange.MultipartLength(ranges, boundary, ctype, size)
	}
	var n int64
	for _, r := range ranges {
		n += r.Len()
	}
	return n
}

func (b *rangeBody) Read(p []byte) (int, error) {
	c, err := b.next(p, false)
	b.count(err)
	return len(c), err
}

// count counts a body ended short of its length by err (neither nil nor
// io.EOF): the status line and Content-Length were sent already, so the
// client sees a connection closed early.
func (b *rangeBody) count(err error) {
	if err != nil && err != io.EOF && b.m != nil {
		b.m.cutShort.Inc()
	}
}

// WriteTo hands the body to w in the largest pieces it has: a stored
// slice's bytes are lent straight from the source's buffer (fasthttp's
// bufio.Writer passes a write larger than its buffer to the connection,
// so a slice costs no copy and few syscalls; Read through fasthttp's
// 4 KiB copy buffer cost a copy and a write per 4 KiB), fetched bytes go
// through a scratch buffer taken from the slab pool when first needed.
//
// Lent pieces shorter than coalesceBelow are gathered into one buffer of
// gatherSize and written together. A slice the memory tier stored after
// churn of small entries may lie in the blocks those entries left: a
// 1 MiB slice after 1 KiB misses came in about 740 pieces of 1.4 KiB
// (before the arena kept its victims' blocks in order; victims evicted
// out of order still leave pieces), which fasthttp's 4 KiB buffer turned
// into 256 writes, and a 256 MiB stream cost twice the CPU it did from
// whole slices. Gathered, it is 16 writes and the one copy the buffer
// made anyway. (Writing the pieces with one writev straight to the
// socket instead, 740 iovecs a slice, cost as much CPU as gathering.)
// Only lent bytes are gathered: they are at hand, where a copied piece
// may have waited for the origin, so before the source is asked for
// bytes it cannot lend (next with no buffer) the gathered ones are
// written. Errors are as Read's.
func (b *rangeBody) WriteTo(w io.Writer) (int64, error) {
	var total int64
	var scratch, gather []byte
	defer func() {
		putSlab(scratch)
		putSlab(gather)
	}()
	write := func(c []byte) error {
		n, err := w.Write(c)
		total += int64(n)
		if err == nil && n < len(c) {
			err = io.ErrShortWrite
		}
		return err
	}
	flush := func() error {
		if len(gather) == 0 {
			return nil
		}
		err := write(gather)
		gather = gather[:0]
		return err
	}
	for {
		p := scratch
		if len(gather) > 0 {
			p = nil // may not wait for the origin with bytes gathered
		}
		c, err := b.next(p, true)
		if err == errNeedScratch {
			if werr := flush(); werr != nil {
				return total, werr
			}
			if scratch == nil {
				scratch = getSlab(scratchSize)[:scratchSize]
			}
			continue
		}
		var werr error
		switch {
		case len(c) == 0:
		case len(c) < coalesceBelow && (len(scratch) == 0 || unsafe.SliceData(c) != unsafe.SliceData(scratch)):
			if gather == nil {
				gather = getSlab(gatherSize)[:0]
			}
			if len(gather)+len(c) > cap(gather) {
				werr = flush()
			}
			gather = append(gather, c...)
		default:
			if werr = flush(); werr == nil {
				werr = write(c)
			}
		}
		if werr == nil && err != nil {
			werr = flush() // bytes before a source error still go out, as they did
		}
		if werr != nil {
			return total, werr
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			b.count(err)
			return total, err
		}
	}
}

// scratchSize is WriteTo's copy buffer for bytes that cannot be lent.
const scratchSize = 64 << 10

// WriteTo gathers lent pieces shorter than coalesceBelow into a buffer of
// gatherSize; longer ones are written as they are, without a copy.
const (
	coalesceBelow = 16 << 10
	gatherSize    = 64 << 10
)

// errNeedScratch: next was asked to lend and the source cannot; nothing
// was consumed.
var errNeedScratch = errors.New("proxy: range body needs a copy buffer")

// SupportsBodyWriteTo tells fasthttp that WriteTo may replace Read.
func (b *rangeBody) SupportsBodyWriteTo() bool { return true }

// next returns the next piece of the body; io.EOF after the last. With
// lend, framing and source bytes are lent where possible (borrowed until
// the next call), else copied into p; without, everything is copied into
// p (at most len(p) bytes).
func (b *rangeBody) next(p []byte, lend bool) ([]byte, error) {
	for {
		if len(b.pend) > 0 {
			n := len(b.pend)
			if !lend {
				n = copy(p, b.pend)
			}
			c := b.pend[:n]
			b.pend = b.pend[n:]
			return c, nil
		}
		if b.i == len(b.ranges) {
			if b.multi && !b.ended {
				b.ended = true
				b.frame = byterange.AppendPartsEnd(b.frame[:0], b.boundary)
				b.pend = b.frame
				continue
			}
			return nil, io.EOF
		}
		r := b.ranges[b.i]
		if !b.opened {
			b.opened, b.pos = true, r.Start
			if b.multi {
				b.frame = byterange.AppendPartHeader(b.frame[:0], b.i == 0, b.boundary, b.ctype, r, b.size)
				b.pend = b.frame
				continue
			}
		}
		if b.pos > r.End {
			b.i++
			b.opened = false
			continue
		}
		return b.body(p, r.End+1, lend)
	}
}

// body returns bytes of the current range from b.pos: lent by the source
// when lend is set and it can, else read into p.
func (b *rangeBody) body(p []byte, end int64, lend bool) ([]byte, error) {
	if lend {
		c, err := b.src.lend(b.pos, end)
		if len(c) > 0 || err != nil {
			b.pos += int64(len(c))
			return c, err
		}
		if p == nil {
			return nil, errNeedScratch
		}
	}
	lim := min(int64(len(p)), end-b.pos)
	n, err := b.src.readAt(p[:lim], b.pos, end)
	b.pos += int64(n)
	if err != nil || n > 0 {
		return p[:n], err
	}
	return nil, fmt.Errorf("%w: source returned nothing at %d", ErrTruncated, b.pos)
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
	r := f.addReader(pos)
	f.wakeForReaders() // it counted at 0 while it was only joined
	f.mu.Unlock()
	return r
}

// wakeForReaders wakes the fill goroutine if it waits for its readers:
// one of them just moved ahead. REQUIRES: f.mu held.
func (f *fill) wakeForReaders() {
	if f.waiting {
		f.waiting = false
		f.cond.Broadcast()
	}
}

func (fs *fillSource) readAt(p []byte, off, _ int64) (int, error) {
	r := fs.r
	if off != r.pos {
		r.f.mu.Lock()
		r.pos = max(r.pos, off)
		r.f.wakeForReaders()
		r.f.mu.Unlock()
	}
	n, err := r.Read(p)
	if err == io.EOF {
		err = fmt.Errorf("%w: fill ended at %d", ErrTruncated, r.pos)
	}
	return n, err
}

func (fs *fillSource) lend(int64, int64) ([]byte, error) { return nil, nil }

func (fs *fillSource) close() { _ = fs.r.Close() }

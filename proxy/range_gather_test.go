package proxy

import (
	"bytes"
	"testing"
	"unsafe"

	"strata/proxy/internal/byterange"
)

// pieceWriter records every Write: how many, and whether each one's
// bytes are src's own (lent through, not copied).
type pieceWriter struct {
	out    bytes.Buffer
	writes int
	lent   int // writes whose bytes lie inside src
	src    []byte
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	w.writes++
	if len(p) > 0 && len(w.src) > 0 {
		base, at := uintptr(unsafe.Pointer(unsafe.SliceData(w.src))), uintptr(unsafe.Pointer(unsafe.SliceData(p)))
		if at >= base && at < base+uintptr(len(w.src)) {
			w.lent++
		}
	}
	return w.out.Write(p)
}

// TestRangeBodyGathersSmallLentPieces: a body lent in small pieces (a
// slice stored in the blocks that small entries left) reaches the writer
// in writes of up to gatherSize, not one per piece; pieces of
// coalesceBelow or more go through as they are, without a copy.
func TestRangeBodyGathersSmallLentPieces(t *testing.T) {
	content := bigBody(1 << 20)
	for _, tc := range []struct {
		step       int
		maxWrites  int
		wantLent   bool
		rangeStart int64
	}{
		{step: 1400, maxWrites: (1<<20)/gatherSize + 1},
		{step: 1, maxWrites: (1<<20)/gatherSize + 1},
		{step: coalesceBelow - 1, maxWrites: (1<<20)/gatherSize + 2},
		{step: coalesceBelow, maxWrites: (1 << 20) / coalesceBelow, wantLent: true},
		{step: 100 << 10, maxWrites: (1<<20)/(100<<10) + 1, wantLent: true},
		{step: 1400, maxWrites: (1<<20)/gatherSize + 1, rangeStart: 12345},
	} {
		rs := []byterange.Range{{Start: tc.rangeStart, End: int64(len(content)) - 1}}
		b := &rangeBody{src: &memSource{b: content, step: tc.step, t: t, lends: true}, ranges: rs, size: int64(len(content))}
		w := &pieceWriter{src: content}
		n, err := b.WriteTo(w)
		if err != nil || n != int64(len(content))-tc.rangeStart || !bytes.Equal(w.out.Bytes(), content[tc.rangeStart:]) {
			t.Fatalf("step %d: %d bytes, %v", tc.step, n, err)
		}
		if w.writes > tc.maxWrites {
			t.Errorf("step %d: %d writes, want at most %d", tc.step, w.writes, tc.maxWrites)
		}
		if tc.wantLent && w.lent != w.writes {
			t.Errorf("step %d: %d of %d writes copied, want none", tc.step, w.writes-w.lent, w.writes)
		}
	}
}

// halfLentSource lends the even stretches of every bytes in small pieces
// and copies the odd ones, checking that by the time it is asked to copy
// (a read that may wait for the origin) the writer has every byte before
// it.
type halfLentSource struct {
	memSource
	every int64
	w     *pieceWriter
}

func (h *halfLentSource) lend(off, end int64) ([]byte, error) {
	if (off/h.every)%2 == 1 {
		return nil, nil
	}
	return h.memSource.lend(off, min(end, (off/h.every+1)*h.every))
}

func (h *halfLentSource) readAt(p []byte, off, end int64) (int, error) {
	if int64(h.w.out.Len()) != off {
		h.t.Fatalf("asked to copy at %d with %d bytes written: gathered bytes held back", off, h.w.out.Len())
	}
	return h.memSource.readAt(p, off, end)
}

// TestRangeBodyWritesGatheredBeforeCopy: gathered bytes are written
// before the source is asked for bytes it must copy, each time the body
// goes from lent bytes to copied ones.
func TestRangeBodyWritesGatheredBeforeCopy(t *testing.T) {
	content := bigBody(500 << 10)
	w := &pieceWriter{}
	src := &halfLentSource{memSource: memSource{b: content, step: 1000, t: t, lends: true}, every: 100 << 10, w: w}
	b := &rangeBody{src: src, ranges: []byterange.Range{{Start: 0, End: int64(len(content)) - 1}}, size: int64(len(content))}
	if n, err := b.WriteTo(w); err != nil || n != int64(len(content)) || !bytes.Equal(w.out.Bytes(), content) {
		t.Fatalf("%d bytes, %v", n, err)
	}
}

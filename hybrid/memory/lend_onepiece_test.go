package memory

import (
	"bytes"
	"testing"
	"time"
)

// TestLendValueInOneRunOfASplitEntry: an entry stored in pieces whose
// header and key fill its first run exactly has its whole value in one
// run. Lend lends it as one piece; Bytes must still return the value.
func TestLendValueInOneRunOfASplitEntry(t *testing.T) {
	const bs = 64
	m := newTestCache(t, Options{Capacity: 1 << 20, Shards: 1, BlockSize: bs}, ^uint64(0))
	m.shards[0].arena.scatter = true
	// Blocks: a (one), sep (one), big (256). Freed big first, then a, the
	// free list is a's block and then big's run: the entry below takes a's
	// block for its header and key, and big's run for its value.
	const n = 2 * LendMin / bs
	for _, e := range []struct {
		k string
		n int
	}{{"a", 1}, {"sep", 1}, {"big", n}} {
		if !m.Set([]byte(e.k), make([]byte, e.n*bs-headerSize-len(e.k)), time.Time{}) {
			t.Fatalf("Set %s refused", e.k)
		}
	}
	m.Delete([]byte("big"))
	m.Delete([]byte("a"))
	key := bytes.Repeat([]byte{'k'}, bs-headerSize)
	val := make([]byte, n*bs)
	for i := range val {
		val[i] = byte(i*7 + i>>8)
	}
	if !m.Set(key, val, time.Time{}) {
		t.Fatal("Set refused the value")
	}
	var v Value
	defer v.Release()
	if _, ok := m.Lend(key, &v); !ok || !v.Lent() {
		t.Fatalf("Lend: hit %v, lent %v", ok, v.Lent())
	}
	if f, _ := m.shards[0].find(m.hash(key), key); f.e != nil || len(v.Spans()) != 1 {
		t.Fatalf("scenario not built: contiguous %v, %d pieces", f.e != nil, len(v.Spans()))
	}
	if got := appendPieces(nil, &v); !bytes.Equal(got, val) {
		t.Fatalf("pieces hold %d bytes, not the value", len(got))
	}
	if b := v.Bytes(); !bytes.Equal(b, val) {
		t.Fatalf("Bytes returned %d bytes (%d pieces), want the %d-byte value", len(b), len(v.Spans()), len(val))
	}
}

package hybrid

import (
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// Value holds the bytes of one hit of Cache.Lend: a memory hit of a large
// value borrows the memory tier's bytes under a pin (memory.Value); a disk
// hit is the disk engine's read buffer itself, lent until Release
// (disk.Value); anything else is copied into a buffer the Value owns and
// reuses. The zero value is ready for use; a Value may be reused for any
// number of Lends.
//
// A memory hit may lend a value stored in several runs of the arena's
// blocks: Spans returns them without a copy; Bytes joins them into one
// slice on its first call (a copy, counted in the memory tier's
// Stats.Copied). Every other hit is one slice.
//
// Lifetime. Spans and Bytes stay valid and unchanged until Release (or the next
// Lend into v), whatever happens to the entry meanwhile; every hit needs one
// Release, which is idempotent and may come after the Cache's Close. While
// lent, the entry's memory stays charged to the memory tier even if it is
// evicted, and a disk hit's read buffer stays out of the engine's pool.
// Not safe for concurrent use, and not to be copied while it holds a hit
// (Swap moves one).
type Value struct {
	mem  memory.Value
	disk disk.Value
	buf  []byte    // SetCopy
	b    []byte    // a disk hit's or SetCopy's value; nil for a memory hit
	one  [1][]byte // Spans of b
	cut  [][]byte  // SetCopyPieces: Spans of b, in pieces
}

// Bytes returns the value in one slice, joining a memory hit's pieces
// first (see Value for how long it is valid).
func (v *Value) Bytes() []byte {
	if v.b != nil {
		return v.b
	}
	return v.mem.Bytes()
}

// Spans returns the value as the pieces it is stored in, in order, without
// a copy; none when v holds nothing. The slice belongs to v: it is not to
// be kept across Swap.
func (v *Value) Spans() [][]byte {
	if v.cut != nil {
		return v.cut
	}
	if v.b != nil {
		v.one[0] = v.b
		return v.one[:]
	}
	return v.mem.Spans()
}

// Len returns the value's length in bytes, without joining its pieces.
func (v *Value) Len() int {
	if v.b != nil {
		return len(v.b)
	}
	return v.mem.Len()
}

// Lent reports whether Bytes is borrowed from the memory tier.
func (v *Value) Lent() bool { return v.mem.Lent() }

// Release lets go of the value: a pin is dropped, a disk read buffer goes
// back to its pool, a copy is kept for reuse.
func (v *Value) Release() {
	v.mem.Release()
	v.disk.Release()
	v.b, v.one[0], v.cut = nil, nil, nil
}

// SetCopy releases v and sets it to a copy of b: for Store fakes that keep
// values of their own.
func (v *Value) SetCopy(b []byte) {
	v.Release()
	v.buf = append(v.buf[:0], b...)
	v.b = v.buf
}

// SetCopyPieces is SetCopy with the copy's Spans cut in n pieces of about
// equal length (at least one byte each, when b has n bytes or more), as a
// memory hit of a value stored in several runs is lent: for Store fakes
// that test a borrower's handling of pieces.
func (v *Value) SetCopyPieces(b []byte, n int) {
	v.SetCopy(b)
	if n < 2 || len(b) < n {
		return
	}
	cut := make([][]byte, 0, n)
	for i := range n {
		cut = append(cut, v.b[i*len(b)/n:(i+1)*len(b)/n])
	}
	v.cut = cut
}

// Lend is Get without a copy for large memory hits: on a hit it sets v to
// key's value (borrowed from memory from memory.LendMin bytes up, else
// copied) and says which tier answered; the caller must Release v. A miss
// leaves v empty and returns TierMiss. A disk hit lends the engine's read
// buffer (disk.Engine.Lend) and is promoted as Get's is. A memory hit
// allocates nothing, nor does a disk hit once the read buffers are pooled.
func (c *Cache) Lend(key []byte, v *Value) (Tier, bool) {
	v.Release()
	if c.closed.Load() {
		return TierMiss, false
	}
	if _, ok := c.mem.Lend(key, &v.mem); ok {
		c.record(key)
		return TierMemory, true
	}
	if c.disks == nil {
		return TierMiss, false
	}
	expiry, ok := c.disks.of(key).Lend(key, &v.disk)
	if !ok {
		return TierMiss, false
	}
	c.record(key)
	v.b = v.disk.Bytes()
	c.promote(key, v.b, expiry)
	return TierDisk, true
}

// Swap exchanges the contents of v and w, pin and buffer included: a
// borrower hands a lent value on (the proxy, to the response body that
// outlives its handler) without a copy.
func (v *Value) Swap(w *Value) { *v, *w = *w, *v }

// Trim drops v's copy buffers if they grew past max bytes, for pools that
// must not hoard large buffers. REQUIRES: v released.
func (v *Value) Trim(max int) {
	if cap(v.buf) > max {
		v.buf = nil
	}
	v.mem.Trim(max)
	v.disk.Trim(max)
}

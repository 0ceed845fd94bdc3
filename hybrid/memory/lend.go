package memory

import (
	"runtime"
	"slices"
	"unsafe"
)

// Lending. Get copies a value out; for a large value that copy is most of
// a hit's cost (a proxied 256 KiB hit spent a third of its CPU in it), so
// Lend hands out the entry's own bytes instead, pinned (pin.go) until the
// borrower calls Value.Release, in as many pieces as the entry is stored
// in (Value.Spans). Small values are still copied, into the
// Value's own buffer: below LendMin a copy costs less than the pin's two
// atomic updates of a word shared by every borrower of the entry.

// LendMin is the value size from which Lend borrows the stored bytes rather
// than copying them. BenchmarkLend, one hot key read by 64 goroutines on 2
// cores, ns per Get (copy) / Lend+Release: 1 KiB 157-253 / 151-173, 4 KiB
// 124-146 / 87-190, 8 KiB 247-443 / 235-440, 16 KiB 856-1590 / 217-276,
// 256 KiB 6401-13514 / 110-192: even from 8 KiB up, then far apart.
const LendMin = 8 << 10

// Value holds the bytes of one hit of Cache.Lend: borrowed from the memory
// tier's arena (Lent reports true) or copied into a buffer the Value owns
// and reuses. The zero value is ready for use; a Value may be reused for
// any number of Lends, each after the previous one's Release.
//
// Pieces. A borrowed value is the entry's own bytes, which the arena keeps
// in one run of blocks (almost always) or in several runs (an entry stored
// where no run was free: see arena.takeRun). Spans returns those runs as
// they lie, without a copy, for a writer that takes pieces (net.Buffers);
// Bytes returns the value as one slice and, for a value in pieces, joins
// them into v's buffer on its first call: a copy, counted in Stats.Copied
// like Get's.
//
// Lifetime. Spans and Bytes stay valid and unchanged until Release, even
// if the entry is evicted, overwritten or deleted meanwhile: its blocks are
// then kept, and stay charged against the Cache's capacity (Stats.Lent),
// until the last borrower releases them. After Release the bytes must not
// be used. A Value not released keeps its blocks out of use for good:
// every Lend that hits needs exactly one Release. Release is idempotent. A
// Value is not safe for concurrent use, and the slice Spans returns belongs
// to it (do not keep it across a copy of the Value). Close does not wait
// for borrowers; bytes lent across Close read as zeros from then on.
type Value struct {
	b      []byte          // the value in one slice: borrowed whole, buf[:n] copied, or joined; nil while only in pieces
	pieces [inSpans][]byte // the first pieces (a whole value is pieces[0])
	more   [][]byte        // all the pieces when there are more than inSpans (reused)
	n      int             // pieces
	len    int             // value bytes
	buf    []byte          // owned copy buffer
	m      *Cache          // keeps the arena mapped while lent
	s      *shard          // non-nil while lent
	blk    uint32          // the lent entry's first block
}

// inSpans is how many pieces a Value holds without an allocation. An entry
// stored in pieces is made of the runs its victims left (arena.takeRun and
// alloc take the free list's head), usually two or three; a Value that
// once held more keeps its larger slice for reuse.
const inSpans = 4

// Bytes returns the value in one slice, joining a value lent in pieces
// into v's buffer first (once per Lend; counted in Stats.Copied). See Value
// for how long it stays valid.
func (v *Value) Bytes() []byte {
	if v.b == nil && v.n > 1 {
		v.buf = slices.Grow(v.buf[:0], v.len)
		for _, p := range v.Spans() {
			v.buf = append(v.buf, p...)
		}
		v.b = v.buf
		v.m.stripe().copied.Add(uint64(v.len))
	}
	return v.b
}

// Spans returns the value as the runs of bytes it is stored in, in order,
// without a copy: one slice for a value copied or stored in one run, none
// when v holds nothing. The slice and the bytes stay valid as Bytes does.
func (v *Value) Spans() [][]byte {
	if v.n > inSpans {
		return v.more[:v.n:v.n]
	}
	return v.pieces[:v.n:v.n]
}

// Len returns the value's length in bytes, without joining its pieces.
func (v *Value) Len() int { return v.len }

// Lent reports whether the bytes are borrowed from the arena (not copied).
func (v *Value) Lent() bool { return v.s != nil }

// add appends a piece p of the value.
func (v *Value) add(p []byte) {
	switch {
	case v.n < inSpans:
		v.pieces[v.n] = p
	case v.n == inSpans:
		v.more = append(append(v.more[:0], v.pieces[:]...), p)
	default:
		v.more = append(v.more, p)
	}
	v.n++
	v.len += len(p)
}

// setWhole sets v to the value b, in one piece.
func (v *Value) setWhole(b []byte) {
	v.b = b
	v.pieces[0], v.n, v.len = b, 1, len(b)
}

// empty forgets v's bytes (not its pin or buffers).
func (v *Value) empty() {
	v.b, v.n, v.len = nil, 0, 0
}

// Release drops the pin on a borrowed value (giving the blocks back if
// the entry has left the cache meanwhile) and empties v.
func (v *Value) Release() {
	if s := v.s; s != nil {
		v.s = nil
		s.unpin(v.blk)
		v.m.stripe().lent.Add(-1)
		v.m = nil
	}
	v.empty()
}

// Lend looks key up like Get. On a hit it sets v to the value, borrowed
// when it is at least LendMin bytes (in one piece or, for an entry stored
// in several runs of blocks, in as many: see Value), else copied into v's
// buffer, and returns the
// entry's expiry and true; the caller must then Release v. On a miss v is
// left empty (and need not be released). v is released first if it holds
// a value. A hit allocates nothing once v's buffer has grown to fit the
// small values it copies.
func (m *Cache) Lend(key []byte, v *Value) (expiry int64, ok bool) {
	v.Release()
	h := m.hash(key)
	s := m.shard(h)
	g, done := s.optimisticLend(h, key, v)
	if !done {
		g = s.lockedLend(h, key, v)
	}
	if g.st == getHit && m.cfg.policy == lru {
		s.touch(h, g.r)
	}
	runtime.KeepAlive(m)
	c := m.stripe()
	if g.st != getHit {
		c.misses.Add(1)
		return 0, false
	}
	c.hits.Add(1)
	if v.s != nil {
		v.m = m
		c.lent.Add(1)
	} else {
		c.copied.Add(uint64(v.len))
	}
	return g.exp, true
}

// lend is get for Lend: a live hit's value is pinned and borrowed (v.s,
// v.blk) or copied into v.buf, and v.b set. Run under s.mu or from
// optimisticLend, which validates the answer and drops a pin it took on
// a torn one.
func (s *shard) lend(h uint64, key []byte, v *Value) got {
	f, ok := s.find(h, key)
	if !ok {
		return got{}
	}
	if f.expiry != 0 && f.expiry <= s.cfg.now() {
		return got{st: getExpired}
	}
	if s.cfg.policy == s3fifo {
		s.hit(f.pos, f.r)
	}
	g := got{exp: f.expiry, st: getHit, r: f.r}
	if f.vlen >= s.cfg.lendMin && s.arena.pin(f.r.block()) {
		v.s, v.blk = s, f.r.block()
		if f.e != nil {
			v.setWhole(f.e[headerSize+len(key):])
		} else {
			s.lendPieces(v, &f, len(key))
		}
		return g
	}
	v.buf = s.appendValue(v.buf[:0], &f, len(key))
	v.setWhole(v.buf)
	return g
}

// lendPieces sets v to the value of the entry f (key klen bytes), stored
// in pieces, as the runs of blocks it lies in (one when the header and key
// end exactly where the first run does: then v.b is set too). Racing a writer (from
// optimisticLend), the chain may be torn: the walk still ends (each run
// consumes at least a block of the bytes left), and the caller discards
// what it found.
func (s *shard) lendPieces(v *Value, f *found, klen int) {
	c := s.arena.cursor(f.r.block(), headerSize+klen+f.vlen)
	c.skip(headerSize + klen)
	for left := f.vlen; left > 0; {
		p := c.take(left)
		if len(p) == 0 {
			return
		}
		v.add(p)
		left -= len(p)
	}
	if v.n == 1 { // header and key filled the first run: the value is whole
		v.b = v.pieces[0]
	}
}

// optimisticLend is optimisticGet for Lend. A pin taken on an answer that
// does not stand is dropped at once.
func (s *shard) optimisticLend(h uint64, key []byte, v *Value) (g got, done bool) {
	if !optimistic || !s.arena.offHeap.Load() {
		return got{}, false
	}
	for range 2 {
		seq := s.seq.Load()
		if seq&1 != 0 {
			break
		}
		g = s.lend(h, key, v)
		if s.seq.Load() == seq && g.st != getExpired {
			return g, true
		}
		v.drop()
	}
	return got{}, false
}

// lockedLend is lend under the read lock, dropping an expired entry it
// finds. A pin taken under the lock is never transient.
func (s *shard) lockedLend(h uint64, key []byte, v *Value) got {
	s.mu.RLock()
	g := s.lend(h, key, v)
	s.mu.RUnlock()
	return s.dropFoundExpired(h, g)
}

// drop undoes a lend whose answer did not stand: a pin it took is
// dropped (and a zombie it was last to hold reclaimed).
func (v *Value) drop() {
	if s := v.s; s != nil {
		v.s = nil
		s.unpin(v.blk)
	}
	v.empty()
}

// Trim drops v's copy buffer, and its slice of pieces, if either grew past
// max bytes, for pools that must not hoard large buffers. REQUIRES: v released.
func (v *Value) Trim(max int) {
	if cap(v.buf) > max {
		v.buf = nil
	}
	if cap(v.more)*int(unsafe.Sizeof(v.b)) > max {
		v.more = nil
	}
}

package memory

import "runtime"

// Lending. Get copies a value out; for a large value that copy is most of
// a hit's cost (a proxied 256 KiB hit spent a third of its CPU in it), so
// Lend hands out the entry's own bytes instead, pinned (pin.go) until the
// borrower calls Value.Release. Small values are still copied, into the
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
// Lifetime. Bytes stays valid and unchanged until Release, even if the
// entry is evicted, overwritten or deleted meanwhile: its blocks are then
// kept, and stay charged against the Cache's capacity (Stats.Lent), until
// the last borrower releases them. After Release the bytes must not be
// used. A Value not released keeps its blocks out of use for good: every
// Lend that hits needs exactly one Release. Release is idempotent. A Value
// is not safe for concurrent use. Close does not wait for borrowers; bytes
// lent across Close read as zeros from then on.
type Value struct {
	b   []byte // the value: borrowed, or buf[:n]
	buf []byte // owned copy buffer
	m   *Cache // keeps the arena mapped while lent
	s   *shard // non-nil while lent
	blk uint32 // the lent entry's first block
}

// Bytes returns the value. See Value for how long it stays valid.
func (v *Value) Bytes() []byte { return v.b }

// Lent reports whether Bytes is borrowed from the arena (not copied).
func (v *Value) Lent() bool { return v.s != nil }

// Release drops the pin on a borrowed value (giving the blocks back if
// the entry has left the cache meanwhile) and empties v.
func (v *Value) Release() {
	if s := v.s; s != nil {
		v.s = nil
		s.unpin(v.blk)
		v.m.stripe().lent.Add(-1)
		v.m = nil
	}
	v.b = nil
}

// Lend looks key up like Get. On a hit it sets v to the value, borrowed
// when it is at least LendMin bytes and stored contiguously (as allocRun
// makes almost every entry), else copied into v's buffer, and returns the
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
		c.copied.Add(uint64(len(v.b)))
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
	if f.e != nil && f.vlen >= s.cfg.lendMin && s.arena.pin(f.r.block()) {
		v.b, v.s, v.blk = f.e[headerSize+len(key):], s, f.r.block()
		return g
	}
	v.buf = s.appendValue(v.buf[:0], &f, len(key))
	v.b = v.buf
	return g
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
	v.b = nil
}

// Trim drops v's copy buffer if it grew past max bytes, for pools that
// must not hoard large buffers. REQUIRES: v released.
func (v *Value) Trim(max int) {
	if cap(v.buf) > max {
		v.buf = nil
	}
}

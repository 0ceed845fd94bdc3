package memory

// Pins: how a lent entry's blocks outlive the entry (see Cache.Lend).
//
// Each block has a pin word beside it (arena.pins, off-heap like next);
// only an entry's first block's is used. Its low 31 bits count the
// borrowers, and zombieBit says that the entry has left the cache (evicted,
// overwritten, deleted, expired) while lent: its blocks are then neither
// freed nor reused, and stay charged to the shard (Stats.Lent), until the
// last borrower lets go and hands them back (shard.reclaim). An entry no one
// borrows is freed at once, as before. Pinning is a reference count, not an
// epoch scheme: a borrower may hold its pin for as long as a slow client
// takes to read a body, and under epochs that would hold back the reuse of
// every block freed meanwhile, not only the lent entry's. The count costs
// more on a hot entry (BenchmarkPinHot, 64 goroutines on 2 Ps, one pin and
// unpin: 22 ns median against 8 ns for an epoch-style striped count), but
// that is 0.02% of a 256 KiB hit's CPU.
//
// Lock-free borrowers. A Lend racing a writer pins the block find returned
// and only then re-reads the shard's sequence counter; a writer removes an
// entry inside a write section (seq odd) and only then reads the pin word.
// Both are sequentially consistent atomics, so either the borrower sees the
// writer's section and drops its pin (a transient pin), or the writer sees
// the pin and keeps the blocks. A transient pin may land on a block that
// was freed or reused meanwhile; it touches only the side word, never entry
// bytes, and the protocol is indifferent to who holds a count: whoever
// brings a zombie's count to zero (a real or a transient borrower) wins a
// CAS from zombieBit to 0, and reclaims it under the write lock. A block is
// in at most one of: a live entry, a zombie, the free list; so its word
// counts the borrowers of one entry at a time, plus transient pins that
// come and go.

// zombieBit marks a pin word whose entry left the cache while lent.
const zombieBit = uint32(1) << 31

// pin adds a borrower to the entry starting at block b; false if b is not
// a block (a racing reader's torn ref).
func (a *arena) pin(b uint32) bool {
	if int(b) >= len(a.pins) {
		return false
	}
	a.pins[b].Add(1)
	return true
}

// unpin drops a borrower of the entry starting at b and reports whether
// the caller must reclaim it: it was a zombie and this was its last pin.
func (a *arena) unpin(b uint32) bool {
	p := &a.pins[b]
	return p.Add(^uint32(0)) == zombieBit && p.CompareAndSwap(zombieBit, 0)
}

// retire is called as the entry starting at b leaves the cache. It reports
// false when no one borrows it (free it now), or marks it a zombie and
// reports true (keep its blocks; the last unpin reclaims them).
// REQUIRES: write lock, inside a write section (seq odd).
func (a *arena) retire(b uint32) bool {
	p := &a.pins[b]
	for {
		v := p.Load()
		if v&^zombieBit == 0 {
			return false
		}
		if p.CompareAndSwap(v, v|zombieBit) {
			return true
		}
	}
}

// zombie is an entry removed while lent: its chain, kept until reclaimed.
type zombie struct {
	last   uint32
	blocks int
	charge int64
}

// freeChain gives the chain first..last (blocks long, charged charge) of
// an entry leaving the cache back to the arena and uncharges it, unless it
// is lent: then it becomes a zombie and stays charged.
// REQUIRES: write lock.
func (s *shard) freeChain(first, last uint32, blocks int, charge int64) {
	if first != noBlock && s.arena.retire(first) {
		if s.zombies == nil {
			s.zombies = make(map[uint32]zombie)
		}
		s.zombies[first] = zombie{last: last, blocks: blocks, charge: charge}
		s.lentA.Add(charge)
		return
	}
	s.arena.release(first, last, blocks)
	s.used -= charge
}

// unpin drops a pin taken on the entry starting at b, reclaiming the
// entry if it was a zombie and this its last pin. REQUIRES: no lock held.
func (s *shard) unpin(b uint32) {
	if s.arena.unpin(b) {
		s.reclaim(b)
	}
}

// reclaim frees the zombie starting at b and uncharges it.
func (s *shard) reclaim(b uint32) {
	s.lockW()
	defer s.unlockW()
	z, ok := s.zombies[b]
	if s.closed || !ok {
		return // Close dropped everything already
	}
	delete(s.zombies, b)
	s.arena.release(b, z.last, z.blocks)
	s.used -= z.charge
	s.usedA.Store(s.used)
	s.lentA.Add(-z.charge)
}

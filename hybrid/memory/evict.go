package memory

// Eviction. All functions here REQUIRE s.mu held for writing.

// makeRoom evicts until charge more bytes fit in the shard's share. Each
// step either frees an entry or moves one (small → main once, main tail →
// main head at most maxFreq times per hit), so the loop ends.
func (s *shard) makeRoom(charge int64) bool {
	if s.used+charge <= s.cfg.share {
		return true
	}
	// The victims' blocks go to the free list in order, for this entry.
	s.arena.releaseInOrder()
	defer s.arena.endInOrder()
	now := int64(-1) // read lazily: most entries have no expiry
	for s.used+charge > s.cfg.share {
		i, ok := s.victim()
		if !ok {
			return false
		}
		s.evict(i, &now)
	}
	return true
}

// victim picks the next entry to evict, applying the policy's moves on the
// way: S3-FIFO promotes small-queue entries that were hit to main and gives
// main entries that were hit another round. FIFO and LRU take main's tail.
func (s *shard) victim() (uint32, bool) {
	if s.cfg.policy != s3fifo {
		i := s.q[qMain].tail
		return i, i != noBlock
	}
	for {
		small, main := &s.q[qSmall], &s.q[qMain]
		if small.n == 0 && main.n == 0 {
			return noBlock, false
		}
		if small.n > 0 && (main.n == 0 || small.bytes*100 > s.cfg.share*smallPercent) {
			i := small.tail
			pos, r := s.refOf(i)
			if r.freq() == 0 {
				return i, true
			}
			s.tab.Load().setRef(pos, r.withFreq(0))
			s.unlink(i)
			s.pushHead(qMain, i)
			continue
		}
		i := main.tail
		if pos, r := s.refOf(i); r.freq() > 0 {
			s.tab.Load().setRef(pos, r.withFreq(r.freq()-1))
			s.unlink(i)
			s.pushHead(qMain, i)
			continue
		}
		return i, true
	}
}

// evict removes slot i. A live entry goes to OnEvict (borrowed bytes) and,
// under S3-FIFO, an entry leaving the small queue leaves its hash in the
// ghost queue. An expired entry is only counted.
func (s *shard) evict(i uint32, now *int64) {
	sl := s.slot(i)
	if sl.expiry != 0 {
		if *now < 0 {
			*now = s.cfg.now()
		}
		if sl.expiry <= *now {
			s.remove(i)
			s.expirations.Add(1)
			return
		}
	}
	if s.cfg.onEvict != nil && !sl.clean {
		s.cfg.onEvict(s.evicted(sl))
	}
	h, fromSmall := sl.hash, sl.queue == qSmall
	s.remove(i)
	s.evictions.Add(1)
	if fromSmall && s.cfg.policy == s3fifo {
		s.addGhost(h)
	}
}

// ghost is a FIFO ring of hashes evicted from the small queue without a
// hit. Membership is recorded in the shard index (ghostBit), so a ghost
// costs one ring cell and one map entry. The ring holds at most as many
// hashes as the shard holds entries (S3-FIFO sizes the ghost like main).
type ghost struct {
	ring []uint64
	head int // oldest
	n    int
}

// addGhost records h as a ghost, forgetting the oldest ghosts beyond the
// limit.
func (s *shard) addGhost(h uint64) {
	g := &s.ghost
	limit := max(s.count, 16)
	for g.n >= limit {
		s.popGhost()
	}
	if g.n == len(g.ring) {
		g.grow(limit)
	}
	g.ring[(g.head+g.n)%len(g.ring)] = h
	g.n++
	if _, _, live := s.index(h); !live {
		s.indexPut(h, ghostRef)
	}
}

func (s *shard) popGhost() {
	g := &s.ghost
	h := g.ring[g.head]
	g.head = (g.head + 1) % len(g.ring)
	g.n--
	if pos, v, ok := s.index(h); ok && v == ghostRef {
		s.tab.Load().del(pos)
	}
}

// grow doubles the ring (at least 16, at most limit cells beyond need).
func (g *ghost) grow(limit int) {
	size := min(max(2*len(g.ring), 16), max(limit, g.n+1))
	ring := make([]uint64, size)
	for j := 0; j < g.n; j++ {
		ring[j] = g.ring[(g.head+j)%len(g.ring)]
	}
	g.ring, g.head = ring, 0
}

package memory

import (
	"fmt"
	"testing"
	"time"
)

// check verifies every shard's internal consistency: queue links and
// totals, index ↔ slots, charged bytes, block accounting.
func (m *Cache) check() error {
	for si := range m.shards {
		s := &m.shards[si]
		s.mu.Lock()
		err := s.check()
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("shard %d: %w", si, err)
		}
	}
	if b := m.Bytes(); b > m.Capacity() {
		return fmt.Errorf("Bytes %d > Capacity %d", b, m.Capacity())
	}
	return nil
}

func (s *shard) check() error {
	if s.closed {
		return nil
	}
	var count int
	var used int64
	blocks := 0
	for qi := range s.q {
		q := &s.q[qi]
		n, bytes, prev := 0, int64(0), noBlock
		for i := q.head; i != noBlock; i = s.slot(i).next {
			sl := s.slot(i)
			if sl.prev != prev || int(sl.queue) != qi {
				return fmt.Errorf("queue %d slot %d: prev %d want %d, queue %d", qi, i, sl.prev, prev, sl.queue)
			}
			if _, v, ok := s.index(sl.hash); !ok || v.withFreq(0) != refOf(i, sl.first) {
				return fmt.Errorf("slot %d: index[%x] = %#x, %v", i, sl.hash, v, ok)
			}
			if err := s.checkChain(sl); err != nil {
				return fmt.Errorf("slot %d: %w", i, err)
			}
			if err := s.checkHeader(sl); err != nil {
				return fmt.Errorf("slot %d: %w", i, err)
			}
			blocks += s.blocksOf(sl)
			n++
			bytes += s.chargeOf(sl)
			prev = i
		}
		if n != q.n || bytes != q.bytes || prev != q.tail {
			return fmt.Errorf("queue %d: n %d/%d bytes %d/%d tail %d/%d", qi, n, q.n, bytes, q.bytes, prev, q.tail)
		}
		count += n
		used += bytes
	}
	if s.cfg.policy != s3fifo && s.q[qSmall].n != 0 {
		return fmt.Errorf("policy %d uses the small queue", s.cfg.policy)
	}
	live, err := s.checkTable()
	if err != nil {
		return err
	}
	var lent int64
	for b, z := range s.zombies {
		if s.arena.pins[b].Load()&zombieBit == 0 {
			return fmt.Errorf("zombie at block %d: pin word %#x has no zombie bit", b, s.arena.pins[b].Load())
		}
		blocks += z.blocks
		used += z.charge
		lent += z.charge
	}
	if lent != s.lentA.Load() {
		return fmt.Errorf("zombies charged %d, lentA %d", lent, s.lentA.Load())
	}
	switch {
	case count != s.count || live != count:
		return fmt.Errorf("count %d, s.count %d, live index entries %d", count, s.count, live)
	case used != s.used || used != s.usedA.Load():
		return fmt.Errorf("used %d, s.used %d, usedA %d", used, s.used, s.usedA.Load())
	case used > s.cfg.share:
		return fmt.Errorf("used %d > share %d", used, s.cfg.share)
	case int(s.arena.fresh)-s.arena.nfree != blocks:
		return fmt.Errorf("blocks: fresh %d - free %d != live %d", s.arena.fresh, s.arena.nfree, blocks)
	case s.ghost.n > max(s.count, 16):
		return fmt.Errorf("ghost %d > entries %d", s.ghost.n, s.count)
	}
	return nil
}

func (s *shard) checkChain(sl *slot) error {
	want := s.blocksOf(sl)
	n, last := 0, noBlock
	for b := sl.first; b != noBlock; b = s.arena.next[b] {
		if b >= s.arena.fresh || n > want {
			return fmt.Errorf("chain: block %d (fresh %d) after %d of %d", b, s.arena.fresh, n, want)
		}
		n, last = n+1, b
	}
	if n != want || last != sl.last {
		return fmt.Errorf("chain: %d blocks ending %d, want %d ending %d", n, last, want, sl.last)
	}
	return nil
}

// checkHeader compares the entry's header with its slot.
func (s *shard) checkHeader(sl *slot) error {
	hd := s.arena.header(sl.first)
	contig := uint32(0)
	if s.arena.contiguous(sl.first, s.blocksOf(sl)) {
		contig = 1
	}
	if hd.expiry != sl.expiry || hd.klen != sl.klen || hd.vlen != sl.vlen || hd.contig != contig {
		return fmt.Errorf("header %d/%d/%d/%d, slot %d/%d/%d, contiguous %d",
			hd.expiry, hd.klen, hd.vlen, hd.contig, sl.expiry, sl.klen, sl.vlen, contig)
	}
	return nil
}

// checkTable verifies the index table: every pair reachable by a probe from
// its home, refs well formed, the used count right. It returns the live
// (non-ghost) pairs.
func (s *shard) checkTable() (live int, err error) {
	t := s.tab.Load()
	used := 0
	for i := range t.n {
		h := t.words[2*i]
		if h == 0 {
			continue
		}
		used++
		if pos, _, ok := t.find(h); !ok || pos != i {
			return 0, fmt.Errorf("table: hash %x at %d found at %d, %v", h, i, pos, ok)
		}
		v := t.ref(i)
		if v.ghost() {
			if v != ghostRef {
				return 0, fmt.Errorf("ghost index value %#x", v)
			}
			continue
		}
		if s.slot(v.slot()).hash != h {
			return 0, fmt.Errorf("table: hash %x points at slot %d of hash %x", h, v.slot(), s.slot(v.slot()).hash)
		}
		live++
	}
	if used != t.used {
		return 0, fmt.Errorf("table: %d pairs, used %d", used, t.used)
	}
	return live, nil
}

// queueOf returns the queue holding key, or -1.
func (m *Cache) queueOf(key []byte) int {
	h := m.hash(key)
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, sl, ok := s.lookup(h, key); ok {
		return int(sl.queue)
	}
	return -1
}

// testClock is an injected clock for expiry tests.
type testClock struct{ t int64 }

func (c *testClock) now() int64                   { return c.t }
func (c *testClock) at(d time.Duration) time.Time { return time.Unix(0, c.t+int64(d)) }

// newTestCache builds a Cache closed at the end of the test; hashMask
// clears hash bits to force collisions (^0 for none).
func newTestCache(t testing.TB, o Options, hashMask uint64) *Cache {
	t.Helper()
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	m.hashMask = hashMask
	t.Cleanup(func() { _ = m.Close() })
	return m
}

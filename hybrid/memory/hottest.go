package memory

import (
	"cmp"
	"runtime"
	"slices"
)

// Hottest calls fn for every live entry, hottest first, until fn returns
// false. An entry is handed over as an Evicted (borrowed key, value copied
// on request), with clean saying whether it is a clean copy of a lower
// tier's (SetClean). The hybrid Cache writes the memory tier down to disk
// with it at stop, and records its keys so that the next start can bring
// them back.
//
// Hotness. Entries are ranked by their hit count (S3-FIFO's 0..3, kept
// in the index word), then main queue before small queue, then by place
// from each queue's head (the newest, or under LRU the most recently
// read). Places in different shards interleave: shards are equal shares
// of one hash space, so the i-th entry of each is about as hot.
//
// Cost and locking. A first pass takes each shard's read lock once and
// lists its entries (24 bytes each); after sorting, each entry is handed
// to fn under its shard's write lock, taken for that one entry, so fn may
// take as long as it likes without holding a shard for more than one
// entry. An entry removed or replaced between the passes is skipped. fn
// must not call back into the Cache. Meant for a quiesced cache (at
// stop): under concurrent writes the order is a snapshot and entries set
// after the first pass are not seen.
func (m *Cache) Hottest(fn func(ev Evicted, clean bool) bool) {
	list := m.rank()
	defer runtime.KeepAlive(m) // the cleanup unmaps the arenas fn reads
	for _, r := range list {
		if !m.shards[r.shard].handOver(r, m.cfg.now, fn) {
			return
		}
	}
}

// ranked is one entry's place in Hottest's order.
type ranked struct {
	hash  uint64
	slot  uint32
	shard uint32
	score uint64 // higher is hotter
}

// rank lists every shard's entries and sorts them hottest first.
func (m *Cache) rank() []ranked {
	var list []ranked
	for i := range m.shards {
		list = m.shards[i].rank(uint32(i), list)
	}
	slices.SortStableFunc(list, func(a, b ranked) int { return cmp.Compare(b.score, a.score) })
	return list
}

// rank appends the shard's live entries with their scores: hit count in
// the top bits, then the queue, then the place from the queue's head
// (inverted, so the head scores highest).
func (s *shard) rank(id uint32, list []ranked) []ranked {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return list
	}
	for _, qi := range [...]uint8{qMain, qSmall} {
		place := uint64(0)
		for i := s.q[qi].head; i != noBlock; i = s.slot(i).next {
			sl := s.slot(i)
			_, r, ok := s.index(sl.hash)
			if !ok || r.ghost() || r.slot() != i {
				continue
			}
			score := uint64(r.freq())<<62 | uint64(qi)<<61 | (1<<61 - 1 - min(place, 1<<61-1))
			list = append(list, ranked{hash: sl.hash, slot: i, shard: id, score: score})
			place++
		}
	}
	return list
}

// handOver calls fn with the entry r names if it is still live.
func (s *shard) handOver(r ranked, now func() int64, fn func(Evicted, bool) bool) bool {
	s.mu.Lock() // Evicted may gather a key into s.scratch; nothing else changes
	defer s.mu.Unlock()
	if s.closed || r.slot >= s.nslots {
		return true
	}
	sl := s.slot(r.slot)
	if sl.queue == qFree || sl.hash != r.hash {
		return true
	}
	if sl.expiry != 0 && sl.expiry <= now() {
		return true
	}
	return fn(s.evicted(sl), sl.clean)
}

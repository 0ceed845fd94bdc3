package memory

import (
	"runtime"
	"time"
)

// Writing entries. A small entry is stored in one critical section. A large
// one (splitMin bytes or more) in three, so that its copy does not hold
// the shard lock (copying a 33 KiB value into the arena was half
// of every insert's time under the lock, and other inserts and LRU hits of
// the shard queued behind it):
//
//  1. under the lock, make room (evicting as needed) and take and charge
//     the blocks: a reservation, in no queue and no index, so neither
//     eviction nor a reader can reach it;
//  2. without the lock, write header, key and value into those blocks;
//  3. under the lock, drop the key's old entry and publish the new one.
//
// Readers cannot see the blocks while they are written: the blocks were
// freed by an earlier write critical section, which moved the sequence
// counter, so a reader still holding their old address discards what it
// read (see optimisticGet). Until step 3 a Get still finds the old value.

// splitMin is the key+value size from which Set copies outside the lock:
// below it, the copy costs less than taking the lock a second time.
const splitMin = 4 << 10

// Set stores a copy of key and value, replacing any entry under key, with
// an absolute expiry (the zero time for none). It evicts as needed and
// reports false, storing nothing and dropping any old entry, when the
// entry's charge exceeds a quarter of a shard's share (Capacity/Shards),
// when expiry has already passed, or after Close.
func (m *Cache) Set(key, value []byte, expiry time.Time) bool {
	return m.set(key, parts{value}, expiry, storeDirty)
}

// SetParts is Set of the value head|body|tail, each part copied once,
// straight into the entry's blocks: a caller that would join the parts
// first copies nothing itself.
func (m *Cache) SetParts(key, head, body, tail []byte, expiry time.Time) bool {
	return m.set(key, parts{head, body, tail}, expiry, storeDirty)
}

// parts is a value given as the concatenation of up to three slices.
type parts [3][]byte

func (v *parts) len() int { return len(v[0]) + len(v[1]) + len(v[2]) }

// set stores as mode says and counts the outcome; a clean entry not
// stored is not counted as refused (store counts the refusals it means).
func (m *Cache) set(key []byte, value parts, expiry time.Time, mode storeMode) bool {
	h := m.hash(key)
	s := m.shard(h)
	ok := s.store(h, key, &value, expiryOf(expiry), mode)
	runtime.KeepAlive(m) // store writes the arena unlocked; the cleanup unmaps it
	switch {
	case ok:
		s.sets.Add(1)
	case mode == storeDirty:
		s.refused.Add(1)
	}
	return ok
}

// SetClean stores a copy of key and value like Set, but only if key has no
// live entry, and marks the entry clean: a copy of what a lower tier (the
// disk) already holds, which eviction therefore does not offer to OnEvict.
// It reports whether it stored the entry. The hybrid Cache promotes disk
// hits with it: a promotion never replaces a newer value set meanwhile.
func (m *Cache) SetClean(key, value []byte, expiry time.Time) bool {
	return m.set(key, parts{value}, expiry, storeClean)
}

// SetWarm is SetClean for an entry known to be hot: one the memory tier
// held before a restart, read back from the disk. Under S3-FIFO it joins
// the main queue, as a key the ghost queue remembers does, so a warm-up
// larger than the small queue is not evicted again by its own later
// entries before any client asks for them.
func (m *Cache) SetWarm(key, value []byte, expiry time.Time) bool {
	return m.set(key, parts{value}, expiry, storeWarm)
}

// storeMode says what kind of entry store writes.
type storeMode uint8

const (
	storeDirty storeMode = iota // Set
	storeClean                  // SetClean: a lower tier's copy, only if none is live
	storeWarm                   // SetWarm: SetClean, into the main queue
)

func expiryOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixNano(), 1)
}

// store is Set, SetClean or SetWarm, as mode says. A SetClean that finds
// a live entry is not counted as refused.
func (s *shard) store(h uint64, key []byte, value *parts, exp int64, mode storeMode) bool {
	n, clean := len(key)+value.len(), mode != storeDirty
	s.lockW()
	if s.closed || clean && s.live(h, key) {
		s.unlockW()
		return false
	}
	if !s.acceptable(key, value.len(), exp) {
		s.dropOld(h)
		s.unlockW()
		if clean {
			s.refused.Add(1)
		}
		return false
	}
	if n < s.cfg.splitMin {
		qi, freq := s.takeOld(h, mode) // frees its room first
		r, ok := s.reserve(n)
		if ok {
			s.fill(r, key, value, exp)
			ok = s.publish(h, r, len(key), value.len(), exp, clean, qi, freq)
		}
		s.unlockW()
		return ok
	}
	r, ok := s.reserve(n)
	if !ok {
		// As the small path, which took the old entry first: a refused
		// Set leaves no older value behind to be served (the hybrid Cache sends
		// the new one to disk instead).
		s.dropOld(h)
	}
	s.unlockW()
	if !ok {
		return false
	}
	s.fill(r, key, value, exp) // no lock: the blocks are ours alone
	s.lockW()
	defer s.unlockW()
	switch {
	case s.closed: // the arena was dropped under us: nothing to give back
		return false
	case clean && s.live(h, key): // a newer value was set meanwhile
		s.unreserve(r)
		return false
	}
	qi, freq := s.takeOld(h, mode)
	return s.publish(h, r, len(key), value.len(), exp, clean, qi, freq)
}

// live reports whether key has a live entry under h. REQUIRES: s.mu held.
func (s *shard) live(h uint64, key []byte) bool {
	_, ok := s.find(h, key)
	return ok
}

// acceptable reports whether an entry of key, a value of vlen bytes and
// expiry exp may be stored at all.
func (s *shard) acceptable(key []byte, vlen int, exp int64) bool {
	return len(key) <= maxLen && vlen <= maxLen &&
		s.cfg.charge(len(key)+vlen) <= s.cfg.maxEntry &&
		(exp == 0 || exp > s.cfg.now())
}

// dropOld removes the live entry under h, if any. REQUIRES: write lock.
func (s *shard) dropOld(h uint64) {
	if _, v, ok := s.index(h); ok && !v.ghost() {
		s.remove(v.slot())
	}
}

// resv is room taken for an entry that is not yet published: charged
// blocks in no queue and no index.
type resv struct {
	first, last uint32
	blocks      int
	charge      int64
}

// reserve makes room for an entry of n key+value bytes, evicting as
// needed, and takes and charges its blocks. REQUIRES: write lock; the
// entry is acceptable.
func (s *shard) reserve(n int) (resv, bool) {
	r := resv{blocks: s.cfg.blocks(n), charge: s.cfg.charge(n)}
	if !s.makeRoom(r.charge) {
		return r, false
	}
	var ok bool
	if r.first, r.last, ok = s.arena.alloc(r.blocks); !ok {
		return r, false
	}
	s.used += r.charge
	s.usedA.Store(s.used)
	return r, true
}

// unreserve gives a reservation back. REQUIRES: write lock.
func (s *shard) unreserve(r resv) {
	s.arena.release(r.first, r.last, r.blocks)
	s.used -= r.charge
	s.usedA.Store(s.used)
}

// fill writes header, key and value into r's blocks. It needs no lock
// when r is not yet published: no one else reads or writes those blocks.
func (s *shard) fill(r resv, key []byte, value *parts, exp int64) {
	vlen := value.len()
	hd := s.arena.header(r.first)
	hd.expiry, hd.klen, hd.vlen, hd.contig = exp, uint32(len(key)), uint32(vlen), 0
	if s.arena.contiguous(r.first, r.blocks) {
		hd.contig = 1
	}
	c := s.arena.cursor(r.first, headerSize+len(key)+vlen)
	c.skip(headerSize)
	c.write(key)
	for _, p := range value {
		c.write(p)
	}
	s.copiedIn.Add(uint64(vlen))
}

// takeOld removes the live entry under h, if any, and returns the queue
// and hit count a new entry under h starts with: under S3-FIFO the old
// entry's, main for a ghost's hash or a warm entry, else the small queue.
// REQUIRES: write lock.
func (s *shard) takeOld(h uint64, mode storeMode) (qi uint8, freq uint32) {
	if s.cfg.policy != s3fifo {
		s.dropOld(h)
		return qMain, 0
	}
	_, v, ok := s.index(h)
	switch {
	case !ok && mode == storeWarm:
		return qMain, 0
	case !ok:
		return qSmall, 0
	case v.ghost():
		return qMain, 0
	}
	qi, freq = s.slot(v.slot()).queue, v.freq()
	s.remove(v.slot())
	return qi, freq
}

// publish makes the filled reservation r the entry of hash h, at the head
// of queue qi with hit count freq. REQUIRES: write lock; no live entry
// under h.
func (s *shard) publish(h uint64, r resv, klen, vlen int, exp int64, clean bool, qi uint8, freq uint32) bool {
	i := s.newSlot()
	if i == noBlock {
		s.unreserve(r)
		return false
	}
	sl := s.slot(i)
	sl.hash, sl.expiry, sl.first, sl.last = h, exp, r.first, r.last
	sl.klen, sl.vlen, sl.clean = uint32(klen), uint32(vlen), clean
	s.pushHead(qi, i)
	s.indexPut(h, refOf(i, r.first).withFreq(freq))
	s.count++
	s.countA.Store(int64(s.count))
	return true
}

// maxLen bounds a key's and a value's length (their header fields).
const maxLen = 1<<32 - 1

package hybrid

import (
	"slices"
	"sync"
	"sync/atomic"
)

// memSlot describes one entry. It holds no pointers, so the slot pages are
// never scanned by the garbage collector.
type memSlot struct {
	hash   uint64
	expiry int64  // unix nanoseconds, 0 for none
	first  uint32 // first block of the key+value chain, memNil if empty
	last   uint32 // last block of the chain
	klen   uint32
	vlen   uint32
	prev   uint32        // towards the head (newer) of its queue
	next   uint32        // towards the tail (older); free-list link when free
	freq   atomic.Uint32 // S3-FIFO: hits since (re)insertion, capped at memMaxFreq
	queue  uint8         // memQSmall, memQMain or memQFree
	clean  bool          // a copy of what a lower tier holds: not offered to OnEvict
}

// Queues. FIFO and LRU keep every entry in memQMain.
const (
	memQSmall = iota
	memQMain
	memQFree
)

const (
	memMaxFreq = 3
	// memGhostBit marks an index value that is a ghost (a hash evicted
	// from the small queue without a hit), not a slot number.
	memGhostBit = uint32(1) << 31
	// memSlotPageShift: slots live in pages of 1024, so growing never
	// copies old slots (no pause under the lock, no 2× slack).
	memSlotPageShift = 10
	memSlotPageMask  = 1<<memSlotPageShift - 1
	// memSmallPercent is the S3-FIFO small queue's target share of bytes.
	memSmallPercent = 10
)

// memEntryOverhead is the fixed charge per entry on top of its blocks: the
// 48-byte slot, its index map entry and, for S3-FIFO, the ghost that may
// outlive it (an 8-byte ring cell and another map entry). A Swiss map costs
// 17 bytes per slot at 7/16 to 7/8 load, so the two map entries cost 39-78
// bytes. TestMemoryOverhead measures the heap really used per entry (120-135
// bytes across sizes with a full ghost) and fails if it exceeds this figure.
const memEntryOverhead = 144

// memQueue is a doubly linked list of slots: head is the newest, tail the
// oldest.
type memQueue struct {
	head, tail uint32
	bytes      int64
	n          int
}

// memPolicy is MemoryPolicy as a small integer for the hot paths.
type memPolicy uint8

const (
	memS3FIFO memPolicy = iota
	memLRU
	memFIFO
)

func memPolicyOf(p MemoryPolicy) memPolicy {
	switch p {
	case MemoryLRU:
		return memLRU
	case MemoryFIFO:
		return memFIFO
	}
	return memS3FIFO
}

// memConfig is what all shards share; it holds no pointer back to Memory.
type memConfig struct {
	policy   memPolicy
	onEvict  func(key, value []byte, expiry int64)
	now      func() int64
	share    int64 // bytes per shard
	maxEntry int64 // largest charge one entry may have
	block    int   // block size (for charge)
}

// memShard is one independently locked part of a Memory.
type memShard struct {
	mu       sync.RWMutex
	cfg      *memConfig
	index    map[uint64]uint32 // hash → slot number, or memGhostBit
	pages    [][]memSlot
	nslots   uint32 // slots ever handed out
	freeSlot uint32 // head of the free slot list
	arena    memArena
	q        [2]memQueue // memQSmall, memQMain
	ghost    memGhost
	used     int64 // bytes charged, under mu
	count    int   // live entries, under mu
	closed   bool
	scratch  []byte // gathers a non-contiguous evicted entry for OnEvict

	// Read without the lock by Len, Bytes and Stats.
	usedA, countA                                       atomic.Int64
	hits, misses, sets, refused, evictions, expirations atomic.Uint64
	_                                                   [64]byte // keep neighbours' hot words apart
}

func (s *memShard) init(cfg *memConfig) {
	s.cfg = cfg
	s.index = make(map[uint64]uint32)
	s.freeSlot = memNil
	s.arena = newMemArena(cfg.block, cfg.share)
	for i := range s.q {
		s.q[i] = memQueue{head: memNil, tail: memNil}
	}
}

func (s *memShard) slot(i uint32) *memSlot {
	return &s.pages[i>>memSlotPageShift][i&memSlotPageMask]
}

// charge returns the bytes an entry of n key+value bytes is charged: its
// whole blocks, their chain links and the fixed overhead.
func (c *memConfig) charge(n int) int64 {
	blocks := int64((n + c.block - 1) / c.block)
	return blocks*int64(c.block+4) + memEntryOverhead
}

func (s *memShard) chargeOf(sl *memSlot) int64 {
	return s.cfg.charge(int(sl.klen) + int(sl.vlen))
}

// lookup returns the slot holding key under hash h. REQUIRES: s.mu held.
func (s *memShard) lookup(h uint64, key []byte) (uint32, *memSlot, bool) {
	i, ok := s.index[h]
	if !ok || i&memGhostBit != 0 {
		return 0, nil, false
	}
	sl := s.slot(i)
	if int(sl.klen) != len(key) {
		return 0, nil, false
	}
	c := s.arena.cursor(sl.first, int(sl.klen))
	if !c.equal(key) {
		return 0, nil, false
	}
	return i, sl, true
}

// appendValue appends sl's value to dst. REQUIRES: s.mu held.
func (s *memShard) appendValue(dst []byte, sl *memSlot) []byte {
	n := int(sl.vlen)
	dst = slices.Grow(dst, n)
	c := s.arena.cursor(sl.first, int(sl.klen)+n)
	c.skip(int(sl.klen))
	return c.appendTo(dst, n)
}

// newSlot returns a free slot number, growing the pages if needed.
func (s *memShard) newSlot() uint32 {
	if i := s.freeSlot; i != memNil {
		s.freeSlot = s.slot(i).next
		return i
	}
	if s.nslots&memSlotPageMask == 0 {
		s.pages = append(s.pages, make([]memSlot, 1<<memSlotPageShift))
	}
	s.nslots++
	return s.nslots - 1
}

func (s *memShard) pushHead(qi uint8, i uint32) {
	sl, q := s.slot(i), &s.q[qi]
	sl.queue, sl.prev, sl.next = qi, memNil, q.head
	if q.head != memNil {
		s.slot(q.head).prev = i
	} else {
		q.tail = i
	}
	q.head = i
	q.bytes += s.chargeOf(sl)
	q.n++
}

func (s *memShard) unlink(i uint32) {
	sl := s.slot(i)
	q := &s.q[sl.queue]
	if sl.prev != memNil {
		s.slot(sl.prev).next = sl.next
	} else {
		q.head = sl.next
	}
	if sl.next != memNil {
		s.slot(sl.next).prev = sl.prev
	} else {
		q.tail = sl.prev
	}
	q.bytes -= s.chargeOf(sl)
	q.n--
}

// remove drops slot i entirely: queue, blocks, index, slot, charge.
// REQUIRES: s.mu held for writing.
func (s *memShard) remove(i uint32) {
	sl := s.slot(i)
	s.unlink(i)
	charge := s.chargeOf(sl)
	s.arena.release(sl.first, sl.last, s.arena.blocksFor(int(sl.klen)+int(sl.vlen)))
	if v, ok := s.index[sl.hash]; ok && v == i {
		delete(s.index, sl.hash)
	}
	*sl = memSlot{queue: memQFree, next: s.freeSlot}
	s.freeSlot = i
	s.used -= charge
	s.count--
	if s.ghost.n > max(s.count, 16) {
		s.popGhost() // the ghost never outnumbers the entries it is charged to
	}
	s.usedA.Store(s.used)
	s.countA.Store(int64(s.count))
}

// insert stores key and value as a new entry at the head of queue qi,
// evicting as needed. It reports false if blocks could not be mapped.
// REQUIRES: s.mu held for writing; no live entry under h; charge ≤ share.
func (s *memShard) insert(h uint64, key, value []byte, expiry int64, qi uint8, freq uint32) bool {
	n := len(key) + len(value)
	charge := s.cfg.charge(n)
	if !s.makeRoom(charge) {
		return false
	}
	first, last, ok := s.arena.alloc(s.arena.blocksFor(n))
	if !ok {
		return false
	}
	i := s.newSlot()
	sl := s.slot(i)
	sl.hash, sl.expiry, sl.first, sl.last = h, expiry, first, last
	sl.klen, sl.vlen = uint32(len(key)), uint32(len(value))
	sl.clean = false
	sl.freq.Store(freq)
	c := s.arena.cursor(first, n)
	c.write(key)
	c.write(value)
	s.pushHead(qi, i)
	s.index[h] = i
	s.used += charge
	s.count++
	s.usedA.Store(s.used)
	s.countA.Store(int64(s.count))
	return true
}

type memGetStatus uint8

const (
	memGetMiss memGetStatus = iota
	memGetHit
	memGetExpired
)

// get looks key up and, on a live hit, records the hit and appends the
// value to dst. REQUIRES: s.mu held (for writing under LRU).
func (s *memShard) get(h uint64, key, dst []byte) ([]byte, int64, memGetStatus) {
	i, sl, ok := s.lookup(h, key)
	if !ok {
		return dst, 0, memGetMiss
	}
	if sl.expiry != 0 && sl.expiry <= s.cfg.now() {
		return dst, 0, memGetExpired
	}
	s.hit(i, sl)
	return s.appendValue(dst, sl), sl.expiry, memGetHit
}

// dropExpired removes the entry under h if it is (still) expired.
// REQUIRES: s.mu held for writing.
func (s *memShard) dropExpired(h uint64) {
	i, ok := s.index[h]
	if !ok || i&memGhostBit != 0 {
		return
	}
	if sl := s.slot(i); sl.expiry != 0 && sl.expiry <= s.cfg.now() {
		s.remove(i)
		s.expirations.Add(1)
	}
}

// set stores key → value (see Memory.Set). An old entry under h is dropped
// first; under S3-FIFO the new one inherits its queue and hit count, and a
// ghost hit enters main directly. REQUIRES: s.mu held for writing.
func (s *memShard) set(h uint64, key, value []byte, exp int64) bool {
	if s.closed {
		return false
	}
	qi, freq := uint8(memQSmall), uint32(0)
	if v, ok := s.index[h]; ok {
		if v&memGhostBit != 0 {
			qi = memQMain
		} else {
			old := s.slot(v)
			qi, freq = old.queue, old.freq.Load()
			s.remove(v)
		}
	}
	if s.cfg.policy != memS3FIFO {
		qi, freq = memQMain, 0
	}
	if len(key) > memMaxLen || len(value) > memMaxLen ||
		s.cfg.charge(len(key)+len(value)) > s.cfg.maxEntry {
		return false
	}
	if exp != 0 && exp <= s.cfg.now() {
		return false
	}
	return s.insert(h, key, value, exp, qi, freq)
}

const memMaxLen = 1<<32 - 1

// hit records a hit on sl under the read lock (S3-FIFO, FIFO) or moves it
// to the head (LRU, which holds the write lock).
func (s *memShard) hit(i uint32, sl *memSlot) {
	switch s.cfg.policy {
	case memS3FIFO:
		// Load first: a hot entry at the cap costs no write to its line.
		if f := sl.freq.Load(); f < memMaxFreq {
			sl.freq.CompareAndSwap(f, f+1)
		}
	case memLRU:
		if s.q[memQMain].head != i {
			s.unlink(i)
			s.pushHead(memQMain, i)
		}
	}
}

// release gives back everything the shard holds. REQUIRES: s.mu held.
func (s *memShard) release() {
	s.closed = true
	s.arena.releaseAll()
	s.index, s.pages, s.scratch = nil, nil, nil
	s.ghost = memGhost{}
	s.nslots, s.freeSlot, s.used, s.count = 0, memNil, 0, 0
	s.q = [2]memQueue{{head: memNil, tail: memNil}, {head: memNil, tail: memNil}}
	s.usedA.Store(0)
	s.countA.Store(0)
}

package hybrid

import (
	"slices"
	"sync"
	"sync/atomic"
)

// memSlot describes one entry for the write side: queues, eviction,
// removal. It holds no pointers, so the slot pages are never scanned by the
// garbage collector. expiry, klen and vlen repeat the entry's memHeader
// (immutable after insert) so that eviction need not read the arena; the
// S3-FIFO hit count lives only in the header, where hits bump it.
type memSlot struct {
	hash   uint64
	expiry int64  // unix nanoseconds, 0 for none
	first  uint32 // first block of the header+key+value chain
	last   uint32 // last block of the chain
	klen   uint32
	vlen   uint32
	prev   uint32 // towards the head (newer) of its queue
	next   uint32 // towards the tail (older); free-list link when free
	queue  uint8  // memQSmall, memQMain or memQFree
	clean  bool   // a copy of what a lower tier holds: not offered to OnEvict
}

// memRef is an index value: the slot number in the low 32 bits (or
// memGhostBit alone for a ghost) and the entry's first block in the high 32
// bits. A hit goes from the index straight to the block (issue 4: three
// dependent cache misses per hit became two).
type memRef uint64

const memGhostRef = memRef(memGhostBit)

func memRefOf(slot, block uint32) memRef { return memRef(block)<<32 | memRef(slot) }
func (r memRef) slot() uint32            { return uint32(r) }
func (r memRef) block() uint32           { return uint32(r >> 32) }
func (r memRef) ghost() bool             { return uint32(r)&memGhostBit != 0 }

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
	memSmallPercent = 5
)

// memEntryOverhead is the fixed charge per entry on top of its blocks
// (which hold the memHeader too): the 48-byte slot, its index map entry and, for S3-FIFO, the ghost that may
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
	onEvict  func(Evicted)
	now      func() int64
	share    int64 // bytes per shard
	maxEntry int64 // largest charge one entry may have
	block    int   // block size (for charge)
}

// memShard is one independently locked part of a Memory.
type memShard struct {
	mu       sync.RWMutex
	cfg      *memConfig
	index    map[uint64]memRef // hash → slot and first block, or memGhostRef
	pages    [][]memSlot
	nslots   uint32 // slots ever handed out
	freeSlot uint32 // head of the free slot list
	arena    memArena
	q        [2]memQueue // memQSmall, memQMain
	ghost    memGhost
	used     int64 // bytes charged, under mu
	count    int   // live entries, under mu
	closed   bool
	scratch  []byte // gathers an evicted key that spans blocks (see evicted)

	// Read without the lock by Len, Bytes and Stats.
	usedA, countA                                       atomic.Int64
	hits, misses, sets, refused, evictions, expirations atomic.Uint64
	valueCopies                                         atomic.Uint64
	_                                                   [64]byte // keep neighbours' hot words apart
}

func (s *memShard) init(cfg *memConfig) {
	s.cfg = cfg
	s.index = make(map[uint64]memRef)
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
// whole blocks (header included), their chain links and the fixed overhead.
func (c *memConfig) charge(n int) int64 {
	return int64(c.blocks(n))*int64(c.block+4) + memEntryOverhead
}

// blocks returns how many blocks an entry of n key+value bytes occupies.
func (c *memConfig) blocks(n int) int {
	return (memHeaderSize + n + c.block - 1) / c.block
}

func (s *memShard) chargeOf(sl *memSlot) int64 {
	return s.cfg.charge(int(sl.klen) + int(sl.vlen))
}

func (s *memShard) blocksOf(sl *memSlot) int {
	return s.cfg.blocks(int(sl.klen) + int(sl.vlen))
}

// find returns the index value and header of key's live entry under hash
// h. It reads the index and the entry's first block (all of the entry when
// it is contiguous), not the slot. REQUIRES: s.mu held.
func (s *memShard) find(h uint64, key []byte) (memRef, *memHeader, bool) {
	r, ok := s.index[h]
	if !ok || r.ghost() {
		return 0, nil, false
	}
	hd := s.arena.header(r.block())
	if int(hd.klen) != len(key) {
		return 0, nil, false
	}
	if hd.contig != 0 {
		p := s.arena.run(r.block(), memHeaderSize+len(key))
		return r, hd, string(p[memHeaderSize:]) == string(key)
	}
	c := s.arena.cursor(r.block(), memHeaderSize+len(key))
	c.skip(memHeaderSize)
	return r, hd, c.equal(key)
}

// lookup returns the slot holding key under hash h. REQUIRES: s.mu held.
func (s *memShard) lookup(h uint64, key []byte) (uint32, *memSlot, bool) {
	r, _, ok := s.find(h, key)
	if !ok {
		return 0, nil, false
	}
	return r.slot(), s.slot(r.slot()), true
}

// appendValue appends the value of the entry starting at block b to dst.
// REQUIRES: s.mu held.
func (s *memShard) appendValue(dst []byte, b uint32, hd *memHeader) []byte {
	k, n := memHeaderSize+int(hd.klen), int(hd.vlen)
	if hd.contig != 0 {
		return append(dst, s.arena.run(b, k+n)[k:]...)
	}
	dst = slices.Grow(dst, n)
	c := s.arena.cursor(b, k+n)
	c.skip(k)
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
	s.arena.release(sl.first, sl.last, s.blocksOf(sl))
	if v, ok := s.index[sl.hash]; ok && !v.ghost() && v.slot() == i {
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
	blocks := s.cfg.blocks(n)
	first, last, ok := s.arena.alloc(blocks)
	if !ok {
		return false
	}
	i := s.newSlot()
	sl := s.slot(i)
	sl.hash, sl.expiry, sl.first, sl.last = h, expiry, first, last
	sl.klen, sl.vlen = uint32(len(key)), uint32(len(value))
	sl.clean = false
	hd := s.arena.header(first)
	hd.expiry, hd.klen, hd.vlen, hd.contig = expiry, sl.klen, sl.vlen, 0
	if s.arena.contiguous(first, blocks) {
		hd.contig = 1
	}
	hd.freq.Store(freq)
	c := s.arena.cursor(first, memHeaderSize+n)
	c.skip(memHeaderSize)
	c.write(key)
	c.write(value)
	s.pushHead(qi, i)
	s.index[h] = memRefOf(i, first)
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
	r, hd, ok := s.find(h, key)
	if !ok {
		return dst, 0, memGetMiss
	}
	if hd.expiry != 0 && hd.expiry <= s.cfg.now() {
		return dst, 0, memGetExpired
	}
	s.hit(r.slot(), hd)
	return s.appendValue(dst, r.block(), hd), hd.expiry, memGetHit
}

// dropExpired removes the entry under h if it is (still) expired.
// REQUIRES: s.mu held for writing.
func (s *memShard) dropExpired(h uint64) {
	r, ok := s.index[h]
	if !ok || r.ghost() {
		return
	}
	if sl := s.slot(r.slot()); sl.expiry != 0 && sl.expiry <= s.cfg.now() {
		s.remove(r.slot())
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
		if v.ghost() {
			qi = memQMain
		} else {
			old := s.slot(v.slot())
			qi, freq = old.queue, s.arena.header(v.block()).freq.Load()
			s.remove(v.slot())
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

// hit records a hit on slot i, whose header is hd, under the read lock
// (S3-FIFO, FIFO) or moves it to the head (LRU, which holds the write lock).
func (s *memShard) hit(i uint32, hd *memHeader) {
	switch s.cfg.policy {
	case memS3FIFO:
		// Load first: a hot entry at the cap costs no write to its line.
		if f := hd.freq.Load(); f < memMaxFreq {
			hd.freq.CompareAndSwap(f, f+1)
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

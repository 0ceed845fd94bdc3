package memory

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// slot describes one entry for the write side: queues, eviction,
// removal. It holds no pointers, so the slot pages are never scanned by the
// garbage collector. expiry, klen and vlen repeat the entry's header
// (immutable after insert) so that eviction need not read the arena; the
// S3-FIFO hit count lives only in the header, where hits bump it.
type slot struct {
	hash   uint64
	expiry int64  // unix nanoseconds, 0 for none
	first  uint32 // first block of the header+key+value chain
	last   uint32 // last block of the chain
	klen   uint32
	vlen   uint32
	prev   uint32 // towards the head (newer) of its queue
	next   uint32 // towards the tail (older); free-list link when free
	queue  uint8  // qSmall, qMain or qFree
	clean  bool   // a copy of what a lower tier holds: not offered to OnEvict
}

// entryRef is an index value: the entry's first block in the high 32 bits;
// in the low 32 its slot number (refSlotBits), its S3-FIFO hit count
// (refFreqShift, 0..maxFreq) and ghostBit, which alone marks a
// ghost. A hit goes from the index straight to the block (three
// dependent cache misses per hit became two), and bumps the count in the
// index word it already holds (see table for why it lives there).
type entryRef uint64

const ghostRef = entryRef(ghostBit)

const (
	refSlotBits  = 29
	refSlotMask  = 1<<refSlotBits - 1
	refFreqShift = refSlotBits
	// maxSlots bounds a shard's slots so that a slot number fits its
	// field; at the smallest charge per entry that is over 100 GiB a shard.
	maxSlots = refSlotMask
)

func refOf(slot, block uint32) entryRef { return entryRef(block)<<32 | entryRef(slot) }
func (r entryRef) slot() uint32         { return uint32(r) & refSlotMask }
func (r entryRef) block() uint32        { return uint32(r >> 32) }
func (r entryRef) ghost() bool          { return uint32(r)&ghostBit != 0 }
func (r entryRef) freq() uint32         { return uint32(r) >> refFreqShift & maxFreq }

// withFreq returns r with hit count f (0..maxFreq).
func (r entryRef) withFreq(f uint32) entryRef {
	return r&^(maxFreq<<refFreqShift) | entryRef(f)<<refFreqShift
}

// Queues. FIFO and LRU keep every entry in qMain.
const (
	qSmall = iota
	qMain
	qFree
)

const (
	maxFreq = 3
	// ghostBit marks an index value that is a ghost (a hash evicted
	// from the small queue without a hit), not a slot number.
	ghostBit = uint32(1) << 31
	// slotPageShift: slots live in pages of 1024, so growing never
	// copies old slots (no pause under the lock, no 2× slack).
	slotPageShift = 10
	slotPageMask  = 1<<slotPageShift - 1
	// smallPercent is the S3-FIFO small queue's target share of bytes:
	// 5, not the paper's 10, measured against otter on Zipf and
	// Zipf+scan traces at 0.5-20% capacity (bench/otter's sweep): +0.003
	// to +0.005 hit ratio everywhere, at the cost of 0.01 when popularity
	// drifts fast.
	smallPercent = 5
)

// entryOverhead is the fixed charge per entry on top of its blocks
// (which hold the header too): the 48-byte slot, its index pair and, for
// S3-FIFO, the ghost that may outlive it (an 8-byte ring cell and another
// pair). A table pair costs 16 bytes at 1/2 to 3/4 load, so the two
// cost 43-64 bytes. TestOverhead measures the heap really used per
// entry (110 bytes with a full ghost; 144 with the Swiss map before) and
// fails if it exceeds this figure.
const entryOverhead = 144

// queue is a doubly linked list of slots: head is the newest, tail the
// oldest.
type queue struct {
	head, tail uint32
	bytes      int64
	n          int
}

// policy is Policy as a small integer for the hot paths.
type policy uint8

const (
	s3fifo policy = iota
	lru
	fifo
)

func policyOf(p Policy) policy {
	switch p {
	case LRU:
		return lru
	case FIFO:
		return fifo
	}
	return s3fifo
}

// config is what all shards share; it holds no pointer back to Cache.
type config struct {
	policy   policy
	onEvict  func(Evicted)
	now      func() int64
	share    int64 // bytes per shard
	maxEntry int64 // largest charge one entry may have
	block    int   // block size (for charge)
	splitMin int   // Set copies entries this large outside the lock (splitMin; tests lower it)
	lendMin  int   // Lend borrows values this large (LendMin; tests lower it)
}

// shard is one independently locked part of a Cache.
type shard struct {
	mu sync.RWMutex
	// seq is odd while a writer changes the table or the arena, and moves
	// on with every such change: a lock-free reader that sees the same even
	// value before and after its reads saw no change (see optimisticGet).
	// Close leaves it odd for good.
	seq      atomic.Uint64
	tab      atomic.Pointer[table] // hash → ref; replaced whole as it grows
	cfg      *config
	pages    [][]slot
	nslots   uint32 // slots ever handed out
	freeSlot uint32 // head of the free slot list
	arena    arena
	q        [2]queue // qSmall, qMain
	ghost    ghost
	used     int64 // bytes charged, under mu
	count    int   // live entries, under mu
	closed   bool
	scratch  []byte            // gathers an evicted key that spans blocks (see evicted)
	zombies  map[uint32]zombie // entries removed while lent, by first block (pin.go)

	// Read without the lock by Len, Bytes and Stats. Hits and misses are
	// counted in Cache.ctrs, striped so that hits on one shard from many
	// goroutines do not all write one cache line.
	usedA, countA                         atomic.Int64
	sets, refused, evictions, expirations atomic.Uint64
	valueCopies, copiedIn                 atomic.Uint64
	lentA                                 atomic.Int64 // bytes charged for zombies
	_                                     [64]byte     // keep neighbours' hot words apart
}

func (s *shard) init(cfg *config) {
	s.cfg = cfg
	s.tab.Store(newMemTable(tableMinSlots))
	s.freeSlot = noBlock
	s.arena.init(cfg.block, cfg.share)
	for i := range s.q {
		s.q[i] = queue{head: noBlock, tail: noBlock}
	}
}

func (s *shard) slot(i uint32) *slot {
	return &s.pages[i>>slotPageShift][i&slotPageMask]
}

// charge returns the bytes an entry of n key+value bytes is charged: its
// whole blocks (header included), their chain links and the fixed overhead.
func (c *config) charge(n int) int64 {
	return int64(c.blocks(n))*int64(c.block+4) + entryOverhead
}

// blocks returns how many blocks an entry of n key+value bytes occupies.
func (c *config) blocks(n int) int {
	return (headerSize + n + c.block - 1) / c.block
}

func (s *shard) chargeOf(sl *slot) int64 {
	return s.cfg.charge(int(sl.klen) + int(sl.vlen))
}

func (s *shard) blocksOf(sl *slot) int {
	return s.cfg.blocks(int(sl.klen) + int(sl.vlen))
}

// lockW takes the write lock and marks the shard as changing for
// lock-free readers; unlockW undoes both.
// After Close the counter stays odd: sections that find the shard closed
// leave it alone.
func (s *shard) lockW() {
	s.mu.Lock()
	if !s.closed {
		s.seq.Add(1)
	}
}

func (s *shard) unlockW() {
	if !s.closed {
		s.seq.Add(1)
	}
	s.mu.Unlock()
}

// index returns the position and ref of hash h in the current table.
// REQUIRES: s.mu held.
func (s *shard) index(h uint64) (uint64, entryRef, bool) {
	return s.tab.Load().find(h)
}

// indexPut sets h → r, growing the table first if it is full.
// REQUIRES: s.mu held for writing.
func (s *shard) indexPut(h uint64, r entryRef) {
	t := s.tab.Load()
	if t.full() {
		t = t.grown()
		s.tab.Store(t)
	}
	t.put(h, r)
}

// found is what find learned of an entry. Its fields are read once from
// the header and checked, so a racing reader never acts on a length it did
// not check.
type found struct {
	pos    uint64 // index position
	r      entryRef
	expiry int64
	vlen   int
	e      []byte // header, key and value when the entry is contiguous, else nil
}

// find returns key's live entry under hash h. It reads the index and the
// entry's first block (all of the entry when it is contiguous), not the
// slot. It runs under s.mu or, from
// optimisticGet, racing a writer: then any bytes it reads may be torn, so
// it checks every length against the arena's bounds and answers
// "not found" rather than fault; the caller discards the answer.
func (s *shard) find(h uint64, key []byte) (f found, ok bool) {
	f.pos, f.r, ok = s.index(h)
	if !ok || f.r.ghost() {
		return f, false
	}
	c, off := s.arena.locate(f.r.block())
	if c == nil {
		return f, false
	}
	s.arena.touch(c, off)
	hd := (*header)(unsafe.Pointer(&c[off]))
	klen, vlen, contig := hd.klen, hd.vlen, hd.contig
	f.expiry, f.vlen = hd.expiry, int(vlen)
	n := headerSize + int(klen) + int(vlen)
	if int(klen) != len(key) || int64(n) > s.cfg.maxEntry {
		return f, false
	}
	if contig != 0 {
		if n > len(c)-off {
			return f, false
		}
		f.e = c[off : off+n : off+n]
		return f, string(f.e[headerSize:headerSize+len(key)]) == string(key)
	}
	cur := s.arena.cursor(f.r.block(), headerSize+len(key))
	cur.skip(headerSize)
	return f, cur.equal(key)
}

// lookup returns the slot holding key under hash h. REQUIRES: s.mu held.
func (s *shard) lookup(h uint64, key []byte) (uint32, *slot, bool) {
	f, ok := s.find(h, key)
	if !ok {
		return 0, nil, false
	}
	return f.r.slot(), s.slot(f.r.slot()), true
}

// appendValue appends the value of f, whose key is klen bytes, to dst:
// from f.e for a contiguous entry, else along the chain.
func (s *shard) appendValue(dst []byte, f *found, klen int) []byte {
	k := headerSize + klen
	if f.e != nil {
		return append(dst, f.e[k:]...)
	}
	dst = slices.Grow(dst, f.vlen)
	c := s.arena.cursor(f.r.block(), k+f.vlen)
	c.skip(k)
	return c.appendTo(dst, f.vlen)
}

// newSlot returns a free slot number, growing the pages if needed.
func (s *shard) newSlot() uint32 {
	if i := s.freeSlot; i != noBlock {
		s.freeSlot = s.slot(i).next
		return i
	}
	if s.nslots == maxSlots {
		return noBlock
	}
	if s.nslots&slotPageMask == 0 {
		s.pages = append(s.pages, make([]slot, 1<<slotPageShift))
	}
	s.nslots++
	return s.nslots - 1
}

func (s *shard) pushHead(qi uint8, i uint32) {
	sl, q := s.slot(i), &s.q[qi]
	sl.queue, sl.prev, sl.next = qi, noBlock, q.head
	if q.head != noBlock {
		s.slot(q.head).prev = i
	} else {
		q.tail = i
	}
	q.head = i
	q.bytes += s.chargeOf(sl)
	q.n++
}

func (s *shard) unlink(i uint32) {
	sl := s.slot(i)
	q := &s.q[sl.queue]
	if sl.prev != noBlock {
		s.slot(sl.prev).next = sl.next
	} else {
		q.head = sl.next
	}
	if sl.next != noBlock {
		s.slot(sl.next).prev = sl.prev
	} else {
		q.tail = sl.prev
	}
	q.bytes -= s.chargeOf(sl)
	q.n--
}

// remove drops slot i entirely: queue, blocks, index, slot, charge.
// REQUIRES: s.mu held for writing.
func (s *shard) remove(i uint32) {
	sl := s.slot(i)
	s.unlink(i)
	s.freeChain(sl.first, sl.last, s.blocksOf(sl), s.chargeOf(sl))
	if pos, v, ok := s.index(sl.hash); ok && !v.ghost() && v.slot() == i {
		s.tab.Load().del(pos)
	}
	*sl = slot{queue: qFree, next: s.freeSlot}
	s.freeSlot = i
	s.count--
	if s.ghost.n > max(s.count, 16) {
		s.popGhost() // the ghost never outnumbers the entries it is charged to
	}
	s.usedA.Store(s.used)
	s.countA.Store(int64(s.count))
}

// refOf returns the index position and ref of the live entry in slot i.
// REQUIRES: s.mu held for writing; slot i is live.
func (s *shard) refOf(i uint32) (uint64, entryRef) {
	pos, r, _ := s.index(s.slot(i).hash)
	return pos, r
}

// release drops everything the shard holds and gives the arena's pages
// back; the mappings stay until the Cache is unreachable (see arena).
// REQUIRES: s.mu held for writing.
func (s *shard) release() {
	s.closed = true
	s.arena.drop()
	s.tab.Store(newMemTable(tableMinSlots))
	s.pages, s.scratch, s.zombies = nil, nil, nil
	s.lentA.Store(0)
	s.ghost = ghost{}
	s.nslots, s.freeSlot, s.used, s.count = 0, noBlock, 0, 0
	s.q = [2]queue{{head: noBlock, tail: noBlock}, {head: noBlock, tail: noBlock}}
	s.usedA.Store(0)
	s.countA.Store(0)
}

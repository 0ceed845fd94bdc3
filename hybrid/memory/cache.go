package memory

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Cache is the memory tier: a byte-bounded, sharded, in-process cache of
// key → value with optional expiry, put in front of the disk engine.
//
// Algorithm. The default policy is S3-FIFO: a new entry enters a small FIFO
// queue (~5% of a shard's bytes); when it reaches the small queue's tail it
// moves to the main FIFO if it was hit meanwhile, else it is evicted and its
// hash is remembered in a ghost FIFO. A key set again while its hash is a
// ghost goes straight to main. Main is a FIFO with reinsertion: an entry at
// the tail that was hit since it last passed gets another round, its hit
// count (capped at 3) decremented. One-hit wonders and scans therefore
// leave through the small queue without disturbing main. LRU (move to the
// front on every hit) and FIFO (no reaction to hits) are selectable.
//
// Sharding. Keys are hashed with a seeded hash/maphash; the top bits pick
// one of a power-of-two number of shards, each with its own lock and an
// equal share of the capacity. Writes (Set, Delete, eviction) take the
// shard's write lock.
//
// Lock-free hits. A Get copies the value out without taking a lock: it
// reads the shard's sequence counter, looks up and copies the value out,
// and reads the counter again; writers make it odd while they change the
// index or reuse blocks. An unchanged even counter proves the copy whole;
// otherwise the Get retries once and then takes the read lock. Nothing a
// racing reader can see makes it fault: the index (table) is read with
// atomics, the arena never moves or unmaps a chunk while the Cache is
// reachable, and every length read is checked against the arena's bounds.
// A hit therefore writes no shared word but the entry's hit count, and only
// until it reaches its cap of 3: two goroutines hitting one hot key do not
// bounce a lock's cache line between their cores (the RWMutex this
// replaced cost 2× otter's time per parallel hit). Hit and miss
// counts go to per-goroutine-ish stripes (Cache.stripe). LRU copies the
// same way and then takes the lock only to move the entry to the head.
//
// Layout. Nothing per entry is a Go object with pointers: a shard
// has an open-addressing table (table) from hash to slot number, first
// block and hit count, pages of pointer-free slots (hash, expiry, sizes,
// queue links) used by the write side, and an arena of fixed-size blocks in
// large off-heap chunks (see arena). An entry's blocks hold a 24-byte
// header (expiry, sizes, a contiguity flag), then the key, then the
// value. A hit therefore touches the index and the entry's own blocks only:
// two dependent cache misses, not three (the slot) or four (the chain links);
// when the chain is one run of blocks, as it almost always is, key compare
// and value copy are single slice operations. The garbage collector's work
// is independent of the entry count. A hit compares the stored key bytes,
// so a 64-bit hash collision is a miss, never a wrong answer; a Set whose
// hash collides with another key's replaces that entry.
//
// Bytes. Capacity bounds the bytes charged: for each entry its blocks
// (whole blocks holding header, key and value, so the unused tail of the
// last one counts), 4 bytes of chain link per block, and entryOverhead
// for slot, index and ghost.
// Bytes() ≤ Capacity at all times, entries removed while lent included
// (Stats.Lent: their blocks are neither freed nor reused until released);
// the RAM used beyond it is the unfilled part of each shard's last chunk
// (mapped lazily, so untouched pages cost nothing), the slack of map
// growth, and the pin words (pin.go: 4 bytes per block, off-heap, paged in
// only where entries were lent; configs' budget counts them in its runtime
// term, capacity/16, with the other memory-tier tables).
//
// Ownership. Set copies key and value in. Get copies the value out by
// appending it to the caller's dst: the returned bytes belong to the caller
// and stay valid forever, even after the entry is evicted. A hit allocates
// nothing when dst has room for the value. Lend (lend.go) is the other way
// out, for large values: it borrows the entry's bytes under a pin that
// eviction, overwrite and delete respect (pin.go), and the caller must
// Release them; blocks removed while lent stay charged until then.
// OnEvict receives a borrowed key and a value it may copy out (see Evicted).
//
// Expiry. An entry may carry an absolute expiry; an expired entry is a miss
// and is dropped when a lookup finds it or when eviction reaches it.
//
// Concurrency. All methods are safe for concurrent use. Cache starts no
// goroutines. Close drops every entry and gives the arenas' pages back; it
// is optional but makes the release prompt. The mappings themselves are
// unmapped by a cleanup once the Cache is unreachable, so that a lock-free
// Get racing Close reads zeros (and then sees closed), never a hole.
type Cache struct {
	shards   []shard
	ctrs     *[stripes]counters // hits and misses, striped (see stripe)
	shift    uint               // 64 - log2(len(shards))
	seed     maphash.Seed
	hashMask uint64  // all ones; tests clear bits to force collisions
	cfg      *config // shared with the shards; holds no pointer back
	cap      int64
}

// stripes is how many stripes Cache counts hits and misses in.
const stripes = 16

// counters is one stripe of hit and miss counts, a cache line of its own.
type counters struct {
	hits, misses atomic.Uint64
	copied       atomic.Uint64 // value bytes copied out by Get, Lend and Value.Bytes
	lent         atomic.Int64  // Values lent minus released (each on its goroutine's stripe)
	_            [32]byte
}

// stripe picks a counter stripe from the address of the calling
// goroutine's stack: goroutines run on stacks of their own, so concurrent
// callers mostly count on different cache lines, and one goroutine keeps
// to one line. (A stack may move; the stripe then changes, harmlessly.)
func (m *Cache) stripe() *counters {
	var probe byte
	a := uint64(uintptr(unsafe.Pointer(&probe)))
	return &m.ctrs[(a>>10)*0x9E3779B97F4A7C15>>60%stripes]
}

// Stats is a snapshot of a Cache's counters. Counters are read
// shard by shard without a global lock, so a snapshot taken while others
// write is not atomic across shards.
type Stats struct {
	Hits        uint64 // Get found a live entry
	Misses      uint64 // Get found nothing, a collision or an expired entry
	Sets        uint64 // Set stored an entry
	Refused     uint64 // Set refused an entry (too big, already expired, closed)
	Evictions   uint64 // entries evicted by the policy (each offered to OnEvict)
	EvictCopies uint64 // evicted values OnEvict copied out (Evicted.CopyValue)
	Copied      uint64 // value bytes hits copied out (Get, Lend below LendMin, Value.Bytes joining pieces)
	CopiedIn    uint64 // value bytes Set and its variants copied into the arena
	Borrowed    int64  // Values lent and not yet released (a gauge)
	Expirations uint64 // expired entries dropped
	Entries     int64  // live entries
	Bytes       int64  // bytes charged (Lent included)
	Lent        int64  // bytes charged for entries removed while lent, held until released
	Capacity    int64  // the configured bound
}

// New builds a Cache from opts (defaults applied to a copy).
func New(opts Options) (*Cache, error) {
	o := opts
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	share := o.Capacity / int64(o.Shards)
	m := &Cache{
		shards:   make([]shard, o.Shards),
		ctrs:     new([stripes]counters),
		shift:    uint(64 - bits.TrailingZeros(uint(o.Shards))),
		seed:     maphash.MakeSeed(),
		cap:      o.Capacity,
		hashMask: ^uint64(0),
		cfg: &config{
			policy:   policyOf(o.Policy),
			onEvict:  o.OnEvict,
			now:      o.Now,
			share:    share,
			maxEntry: share / 4,
			block:    o.BlockSize,
			splitMin: splitMin,
			lendMin:  LendMin,
		},
	}
	maps := make([]mappings, len(m.shards))
	for i := range m.shards {
		m.shards[i].init(m.cfg)
		maps[i] = m.shards[i].arena.mappings()
	}
	runtime.AddCleanup(m, unmapArenas, maps) // not the shards: see mappings
	return m, nil
}

// unmapArenas is Cache's cleanup: it unmaps every arena once no Get
// can be reading one.
func unmapArenas(maps []mappings) {
	for _, m := range maps {
		m.unmap()
	}
}

// hash returns key's hash, never 0 (table's empty mark).
func (m *Cache) hash(key []byte) uint64 {
	return max(maphash.Bytes(m.seed, key)&m.hashMask, 1)
}

func (m *Cache) shard(h uint64) *shard {
	return &m.shards[h>>m.shift]
}

// Get looks key up. On a hit it appends the value to dst and returns the
// extended slice, the entry's expiry (unix nanoseconds, 0 for none) and
// true; it allocates nothing when cap(dst)-len(dst) ≥ len(value). On a miss
// it returns dst unchanged, 0 and false. A Get copies without a lock unless
// a writer is changing the same shard (optimisticGet); LRU then takes the
// lock only to move the entry to the head.
func (m *Cache) Get(key, dst []byte) (value []byte, expiry int64, ok bool) {
	h := m.hash(key)
	s := m.shard(h)
	g, done := s.optimisticGet(h, key, dst)
	if !done {
		g = s.lockedGet(h, key, dst)
	}
	if g.st == getHit && m.cfg.policy == lru {
		s.touch(h, g.r)
	}
	runtime.KeepAlive(m) // the cleanup unmaps the arena s reads
	c := m.stripe()
	if g.st != getHit {
		c.misses.Add(1)
		return dst, 0, false
	}
	c.hits.Add(1)
	c.copied.Add(uint64(len(g.v) - len(dst)))
	return g.v, g.exp, true
}

// Contains reports whether key has a live entry, without copying its value
// or counting a hit: a probe for callers that need to know before they
// read (the proxy checks an object's slices before its status line).
func (m *Cache) Contains(key []byte) bool {
	h := m.hash(key)
	s := m.shard(h)
	s.mu.RLock()
	f, ok := s.find(h, key)
	live := ok && (f.expiry == 0 || f.expiry > s.cfg.now())
	s.mu.RUnlock()
	runtime.KeepAlive(m) // the cleanup unmaps the arena s reads
	return live
}

// Delete removes key; it reports whether a live entry was removed. OnEvict
// is not called.
func (m *Cache) Delete(key []byte) bool {
	h := m.hash(key)
	s := m.shard(h)
	s.lockW()
	defer s.unlockW()
	if s.closed {
		return false
	}
	i, _, ok := s.lookup(h, key)
	if ok {
		s.remove(i)
	}
	return ok
}

// Len returns the number of entries held (expired ones not yet dropped
// included).
func (m *Cache) Len() int {
	var n int64
	for i := range m.shards {
		n += m.shards[i].countA.Load()
	}
	return int(n)
}

// Bytes returns the bytes charged for the entries held; never more than
// Capacity.
func (m *Cache) Bytes() int64 {
	var n int64
	for i := range m.shards {
		n += m.shards[i].usedA.Load()
	}
	return n
}

// Capacity returns the configured bound on Bytes.
func (m *Cache) Capacity() int64 { return m.cap }

// Stats returns a snapshot of the counters.
func (m *Cache) Stats() Stats {
	st := Stats{Capacity: m.cap}
	for i := range m.ctrs {
		st.Hits += m.ctrs[i].hits.Load()
		st.Misses += m.ctrs[i].misses.Load()
		st.Copied += m.ctrs[i].copied.Load()
		st.Borrowed += m.ctrs[i].lent.Load()
	}
	for i := range m.shards {
		s := &m.shards[i]
		st.Sets += s.sets.Load()
		st.Refused += s.refused.Load()
		st.Evictions += s.evictions.Load()
		st.Expirations += s.expirations.Load()
		st.EvictCopies += s.valueCopies.Load()
		st.CopiedIn += s.copiedIn.Load()
		st.Entries += s.countA.Load()
		st.Bytes += s.usedA.Load()
		st.Lent += s.lentA.Load()
	}
	return st
}

// Close drops every entry and gives the arenas back. Afterwards Get misses,
// Set refuses and Delete does nothing. It never fails; the error is for the
// owner's uniform Close chain.
func (m *Cache) Close() error {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		if !s.closed {
			s.seq.Add(1) // odd for good: lock-free readers take the lock and see closed
			s.release()
		}
		s.mu.Unlock()
	}
	return nil
}

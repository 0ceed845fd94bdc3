package disk

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// index maps a 64-bit key hash to an opaque 64-bit value: the disk tier's
// packed entry address. The disk engine owns the packing; the
// index never looks inside a value, and every value, 0 included, is legal.
//
// Memory and the garbage collector. Each shard is one flat []uint64 of
// interleaved (key, value) slots: no pointers anywhere, so the collector
// never scans it however many entries it holds, and an entry costs 16 bytes
// divided by the load factor. Shards grow by 1.25× when they pass 7/8
// full, so the load stays between 0.7 and 0.875: 18.3–22.9 bytes per
// entry without a size hint. newIndex(hint) pre-sizes every shard for its
// share of hint plus five standard deviations, so an engine that knows its
// device's entry capacity never grows the index.
//
// Algorithm. Each shard is an open-addressing Robin Hood table with linear
// probing and backward-shift deletion (no tombstones). A key's home slot is
// fastrange(key, slots) = high64(key × slots), which works for any table
// size, so growth need not double. Lookups stop at the first slot whose
// occupant is closer to its home than the probe is to ours, so misses stay
// as short as hits even at 7/8 load. Key 0 marks an empty slot; the one key
// that mixes to 0 lives in a side field of its shard.
//
// Hash flooding. Keys are xxhash of client-chosen cache keys, unseeded and
// persisted, so anyone could compute keys that crowd one shard's slots and
// turn every probe into a scan. The index therefore stores keys through a
// per-index keyed bijection (mixer): shard and slot come from the mixed
// key, and rangeShard inverts the mix to report the caller's hash. The mix
// is cheap and not cryptographic; it turns offline precomputation into
// guesswork.
//
// Sharding and concurrency. There are a power of two ≥ 4×GOMAXPROCS shards
// (at least 64), picked by the top bits of the mixed key. Each shard has its
// own sync.RWMutex (get takes the read lock, everything else the write
// lock), and shard headers are padded to 128 bytes so that two shards' locks
// never share a cache line. Growth rehashes one shard under its write lock
// (measured about 5 ms per 100k entries in that shard; other shards stay
// available), and only that shard's old and new arrays coexist meanwhile.
// All methods are safe for concurrent use.
type index struct {
	shards []shard
	shift  uint // 64 - sbits: key >> shift is the shard
	sbits  uint // log2(len(shards)); key << sbits is uniform within a shard
	mix    mixer
}

const (
	minShards = 64
	maxShards = 1 << 16
	minSlots  = 8
	// loadNum/loadDen is the load at which a shard grows.
	loadNum = 7
	loadDen = 8
)

// shardHot is the part of a shard that operations touch.
type shardHot struct {
	mu    sync.RWMutex
	slots []uint64 // 2*n words: slots[2i] key (0 = empty), slots[2i+1] value
	n     uint64   // slot count
	used  int      // occupied slots (the key-0 side field not included)
	limit int      // grow when used would exceed limit
	// count is written under mu and read without it by index.len.
	count   atomic.Int64
	zeroVal uint64 // value of the mixed key 0, valid if zeroSet
	zeroSet bool
}

// shard pads shardHot to a multiple of 128 bytes (two cache lines, the
// span of the adjacent-line prefetcher) against false sharing.
type shard struct {
	shardHot
	_ [128 - unsafe.Sizeof(shardHot{})%128]byte
}

// newIndex returns an index sized for about capacityHint entries
// (0 = small; it grows). The hint is allocated up front, about 18.7 bytes
// per hinted entry (16 bytes per slot at 7/8 load, plus headroom), so it
// should be a real bound such as the device's entry capacity.
func newIndex(capacityHint int) *index {
	return newIndexSeeded(capacityHint, rand.Uint64(), rand.Uint64())
}

// newIndexSeeded is newIndex with the mixer's keys given, for tests.
func newIndexSeeded(capacityHint int, k0, k1 uint64) *index {
	nShards := shardCountFor(runtime.GOMAXPROCS(0))
	sbits := uint(bits.TrailingZeros(uint(nShards)))
	ix := &index{
		shards: make([]shard, nShards),
		shift:  64 - sbits,
		sbits:  sbits,
		mix:    newMixer(k0, k1),
	}
	n := slotsFor(perShardCapacity(capacityHint, nShards))
	for i := range ix.shards {
		ix.shards[i].resize(n, sbits)
	}
	return ix
}

// shardCountFor returns the power of two ≥ 4×procs, within
// [minShards, maxShards].
func shardCountFor(procs int) int {
	n := minShards
	for n < 4*procs && n < maxShards {
		n <<= 1
	}
	return n
}

// perShardCapacity returns how many entries each shard should hold
// without growing when hint entries spread over nShards by a good hash: the
// mean plus five standard deviations, so that with 64 shards about one index
// in 50,000 sees a shard grow once.
func perShardCapacity(hint, nShards int) int {
	if hint <= 0 {
		return 0
	}
	mean := float64(hint) / float64(nShards)
	return int(math.Ceil(mean + 5*math.Sqrt(mean)))
}

// slotsFor returns a slot count that holds entries under the load limit
// (n*7/8 ≥ entries) with at most a slot to spare, and at least minSlots.
func slotsFor(entries int) uint64 {
	n := uint64(entries) + uint64(entries)/7 + 1
	return max(n, minSlots)
}

func (ix *index) shardFor(m uint64) *shard {
	return &ix.shards[m>>ix.shift]
}

// get returns the value stored for h.
func (ix *index) get(h uint64) (v uint64, ok bool) {
	m := ix.mix.mix(h)
	s := ix.shardFor(m)
	s.mu.RLock()
	v, ok = s.get(m, ix.sbits)
	s.mu.RUnlock()
	return v, ok
}

// set stores v for h, inserting or overwriting; replaced reports whether h
// was present and old is the value it had.
func (ix *index) set(h, v uint64) (old uint64, replaced bool) {
	m := ix.mix.mix(h)
	s := ix.shardFor(m)
	s.mu.Lock()
	old, replaced = s.set(m, v, ix.sbits)
	s.mu.Unlock()
	return old, replaced
}

// remove deletes h and returns the value it had.
func (ix *index) remove(h uint64) (old uint64, ok bool) {
	m := ix.mix.mix(h)
	s := ix.shardFor(m)
	s.mu.Lock()
	old, ok = s.remove(m, ix.sbits)
	s.mu.Unlock()
	return old, ok
}

// compareAndRemove deletes h only if its value is still v, so that a
// reclaimer dropping a region's entries cannot delete a newer write of the
// same key elsewhere.
func (ix *index) compareAndRemove(h, v uint64) bool {
	m := ix.mix.mix(h)
	s := ix.shardFor(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.get(m, ix.sbits); !ok || cur != v {
		return false
	}
	s.remove(m, ix.sbits)
	return true
}

// compareAndSwap replaces h's value with new only if h is present with
// value old.
func (ix *index) compareAndSwap(h, old, new uint64) bool {
	m := ix.mix.mix(h)
	s := ix.shardFor(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.find(m, ix.sbits)
	if p == nil || *p != old {
		return false
	}
	*p = new
	return true
}

// len returns the number of entries. Under concurrent writes it is a sum
// of per-shard counts read at slightly different moments.
func (ix *index) len() int {
	var n int64
	for i := range ix.shards {
		n += ix.shards[i].count.Load()
	}
	return int(n)
}

// shardCount returns the number of shards, for rangeShard.
func (ix *index) shardCount() int { return len(ix.shards) }

// rangeShard calls fn for each entry of shard i, in no particular order,
// until fn returns false. It holds the shard's read lock throughout: other
// shards are unaffected and gets on this shard proceed, but writers to it
// wait.
//
// REQUIRES: 0 ≤ i < shardCount(); fn does not call ix's methods (a write to
// the same shard would deadlock; collect keys and act after rangeShard).
func (ix *index) rangeShard(i int, fn func(h, v uint64) bool) {
	s := &ix.shards[i]
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.zeroSet && !fn(ix.mix.unmix(0), s.zeroVal) {
		return
	}
	for j := 0; j < len(s.slots); j += 2 {
		if k := s.slots[j]; k != 0 && !fn(ix.mix.unmix(k), s.slots[j+1]) {
			return
		}
	}
}

// The shard's table. Every method below REQUIRES s.mu held (read lock for
// get and find-only use, write lock otherwise) and takes sb, the index's
// shard bits: all keys of a shard share their top sb bits, so key << sb is
// a uniform 64-bit number and its fastrange over n is the home slot.

func (s *shard) home(m uint64, sb uint) uint64 {
	hi, _ := bits.Mul64(m<<sb, s.n)
	return hi
}

// dist returns how far slot i is from m's home, wrapping at the end.
func (s *shard) dist(m uint64, i uint64, sb uint) uint64 {
	h := s.home(m, sb)
	if i >= h {
		return i - h
	}
	return i + s.n - h
}

// slot returns the slot holding m, which must not be 0.
func (s *shard) slot(m uint64, sb uint) (uint64, bool) {
	i := s.home(m, sb)
	for d := uint64(0); ; d++ {
		k := s.slots[2*i]
		if k == m {
			return i, true
		}
		// An empty slot, or an occupant nearer its home than we are to
		// ours, means m would have been placed by now.
		if k == 0 || s.dist(k, i, sb) < d {
			return 0, false
		}
		if i++; i == s.n {
			i = 0
		}
	}
}

// find returns a pointer to m's value, or nil.
func (s *shard) find(m uint64, sb uint) *uint64 {
	if m == 0 {
		if !s.zeroSet {
			return nil
		}
		return &s.zeroVal
	}
	if i, ok := s.slot(m, sb); ok {
		return &s.slots[2*i+1]
	}
	return nil
}

func (s *shard) get(m uint64, sb uint) (uint64, bool) {
	if p := s.find(m, sb); p != nil {
		return *p, true
	}
	return 0, false
}

func (s *shard) set(m, v uint64, sb uint) (old uint64, replaced bool) {
	if p := s.find(m, sb); p != nil {
		old, *p = *p, v
		return old, true
	}
	if m == 0 {
		s.zeroVal, s.zeroSet = v, true
		s.count.Add(1)
		return 0, false
	}
	if s.used >= s.limit {
		s.resize(s.n+max(s.n/4, minSlots), sb)
	}
	s.insertNew(m, v, sb)
	s.used++
	s.count.Add(1)
	return 0, false
}

// insertNew places m, known to be absent and non-zero, Robin Hood style:
// walking from its home, it takes the first slot that is empty or whose
// occupant is nearer its own home, and carries that occupant on.
func (s *shard) insertNew(m, v uint64, sb uint) {
	i := s.home(m, sb)
	for d := uint64(0); ; d++ {
		k := s.slots[2*i]
		if k == 0 {
			s.slots[2*i], s.slots[2*i+1] = m, v
			return
		}
		if kd := s.dist(k, i, sb); kd < d {
			s.slots[2*i], m = m, k
			s.slots[2*i+1], v = v, s.slots[2*i+1]
			d = kd
		}
		if i++; i == s.n {
			i = 0
		}
	}
}

func (s *shard) remove(m uint64, sb uint) (old uint64, ok bool) {
	if m == 0 {
		if !s.zeroSet {
			return 0, false
		}
		old, s.zeroVal, s.zeroSet = s.zeroVal, 0, false
		s.count.Add(-1)
		return old, true
	}
	i, ok := s.slot(m, sb)
	if !ok {
		return 0, false
	}
	old = s.slots[2*i+1]
	s.used--
	s.count.Add(-1)
	// Backward shift: pull each following displaced entry one slot nearer
	// its home until an empty slot or an entry already at home.
	for {
		j := i + 1
		if j == s.n {
			j = 0
		}
		k := s.slots[2*j]
		if k == 0 || s.dist(k, j, sb) == 0 {
			break
		}
		s.slots[2*i], s.slots[2*i+1] = k, s.slots[2*j+1]
		i = j
	}
	s.slots[2*i], s.slots[2*i+1] = 0, 0
	return old, true
}

// resize rehashes the shard into n slots.
func (s *shard) resize(n uint64, sb uint) {
	old := s.slots
	s.slots = make([]uint64, 2*n)
	s.n = n
	s.limit = int(n * loadNum / loadDen)
	for j := 0; j < len(old); j += 2 {
		if old[j] != 0 {
			s.insertNew(old[j], old[j+1], sb)
		}
	}
}

// mixer is a keyed bijection on uint64: (h ^ k0) × k1, then a
// murmur3-style xorshift-multiply-xorshift finaliser. Every step is
// invertible (k1 and mulC are odd, so they have inverses mod 2^64), which
// lets the index store mixed keys and still give callers their own hash.
type mixer struct {
	k0, k1, k1inv uint64
}

const mulC = 0xff51afd7ed558ccd

var mulCInv = inverse(mulC)

func newMixer(k0, k1 uint64) mixer {
	k1 |= 1
	return mixer{k0: k0, k1: k1, k1inv: inverse(k1)}
}

// inverse returns the multiplicative inverse of odd a mod 2^64 by Newton
// iteration (each step doubles the correct low bits; a is right to 3).
func inverse(a uint64) uint64 {
	x := a
	for range 5 {
		x *= 2 - a*x
	}
	return x
}

func (mx *mixer) mix(h uint64) uint64 {
	x := (h ^ mx.k0) * mx.k1
	x ^= x >> 32
	x *= mulC
	x ^= x >> 29
	return x
}

func (mx *mixer) unmix(x uint64) uint64 {
	x ^= x>>29 ^ x>>58
	x *= mulCInv
	x ^= x >> 32
	x *= mx.k1inv
	return x ^ mx.k0
}

// footprint returns the bytes the index holds: shard headers and slot
// arrays (the part that grows with entries).
func (ix *index) footprint() int {
	b := len(ix.shards) * int(unsafe.Sizeof(shard{}))
	for i := range ix.shards {
		s := &ix.shards[i]
		s.mu.RLock()
		b += 8 * cap(s.slots)
		s.mu.RUnlock()
	}
	return b
}

// checkConsistency verifies every shard's invariants: each key sits in its
// shard, the Robin Hood order holds (a slot after an empty one is at its
// home; each slot is at most one further from home than its predecessor),
// and the counts match. Tests call it; it takes each shard's read lock.
func (ix *index) checkConsistency() error {
	for i := range ix.shards {
		s := &ix.shards[i]
		s.mu.RLock()
		err := s.checkConsistency(uint64(i), ix.shift, ix.sbits)
		s.mu.RUnlock()
		if err != nil {
			return fmt.Errorf("disk: index shard %d: %w", i, err)
		}
	}
	return nil
}

func (s *shard) checkConsistency(shard uint64, shift, sb uint) error {
	used := 0
	for i := uint64(0); i < s.n; i++ {
		k := s.slots[2*i]
		if k == 0 {
			continue
		}
		used++
		if k>>shift != shard {
			return fmt.Errorf("slot %d: key %#x belongs to shard %d", i, k, k>>shift)
		}
		prev := (i + s.n - 1) % s.n
		d := s.dist(k, i, sb)
		if pk := s.slots[2*prev]; pk == 0 && d != 0 || pk != 0 && d > s.dist(pk, prev, sb)+1 {
			return fmt.Errorf("slot %d: key %#x at distance %d breaks Robin Hood order", i, k, d)
		}
	}
	want := used
	if s.zeroSet {
		want++
	}
	if used != s.used || int64(want) != s.count.Load() {
		return fmt.Errorf("counts: used %d, field %d, count %d", used, s.used, s.count.Load())
	}
	return nil
}

package hybrid

import (
	"math/bits"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// Promotion says which disk hits the Cache copies into the memory tier.
type Promotion string

// Promotion policies.
const (
	// PromoteSecondHit (the default): a disk hit is promoted when the same
	// key was hit on disk recently before (promoteFilter). A key read
	// once from disk costs no memory-tier copy and evicts nothing; issue
	// 7's working set of 4x memory spent ~11% of its CPU promoting every
	// disk hit, most of them evicted again before their next hit.
	PromoteSecondHit Promotion = "second-hit"
	// PromoteFirstHit: every disk hit is promoted.
	PromoteFirstHit Promotion = "first-hit"
	// PromoteNever: disk hits stay on disk.
	PromoteNever Promotion = "never"
)

// promoteFilter remembers the hashes of recent disk hits, one per slot of
// a direct-mapped table (a doorkeeper: TinyLFU's first stage). A key whose
// hash is found in its slot was hit on disk since that slot was last
// overwritten: its second hit, so it is promoted and the slot cleared. A
// collision only forgets a key (it then needs one more hit), never
// promotes one that was not hit: the slot holds the full hash. Lock-free;
// races between hits of one key at worst promote twice (SetClean keeps the
// first) or not at all this time.
//
// Sized by value. A value larger than promoteSlotBytes uses only the first
// slots of the table, one per such value the memory tier holds (a 64 KiB
// value: a quarter of the table), so its second hit must come within
// about as many disk hits of its size as memory has room for: its reuse
// distance is below the memory tier's capacity, which an LRU of that
// capacity would hit and the entry it would evict (idle for the whole
// capacity) would not. The whole table took every second hit within four
// times that: on a uniform working set of 4x memory in 64 KiB objects,
// where no promotion can raise the hit ratio, 28% of reads were promoted
// (16% now, BenchmarkPromotionMix), and a Zipf mix keeps its memory hits
// with 37% fewer promotions. Promoting nothing large is no answer: the
// Zipf mix then kept 2% memory hits instead of 87%.
type promoteFilter struct {
	slots []atomic.Uint64
	shift uint // index = hash >> shift
}

// Filter size: one slot per promoteSlotBytes of memory capacity (about as
// many keys as the memory tier holds entries of that size, as S3-FIFO sizes
// its ghost queue), within [promoteMinSlots, promoteMaxSlots]. 8 bytes each.
const (
	promoteSlotBytes = 16 << 10
	promoteMinSlots  = 1 << 10
	promoteMaxSlots  = 1 << 20
)

func newPromoteFilter(memCapacity int64) *promoteFilter {
	n := min(max(memCapacity/promoteSlotBytes, promoteMinSlots), promoteMaxSlots)
	lg := bits.Len64(uint64(n - 1)) // n rounded up to a power of two
	return &promoteFilter{slots: make([]atomic.Uint64, 1<<lg), shift: uint(64 - lg)}
}

// second records a disk hit of size bytes of the key hashing to h and
// reports whether it is the key's second recent one.
func (f *promoteFilter) second(h uint64, size int) bool {
	tag := h | 1 // never 0, the empty slot
	s := &f.slots[h>>(f.shift+f.narrow(size))]
	if s.Load() == tag {
		return s.CompareAndSwap(tag, 0)
	}
	s.Store(tag)
	return false
}

// narrow returns by how many bits to shorten the slot index for a value
// of size bytes: log2 of size/promoteSlotBytes, keeping promoteMinSlots.
func (f *promoteFilter) narrow(size int) uint {
	if size <= promoteSlotBytes {
		return 0
	}
	k := uint(bits.Len64(uint64(size/promoteSlotBytes)) - 1)
	return min(k, 64-f.shift-uint(bits.TrailingZeros(promoteMinSlots)))
}

// promote copies a disk hit (key → value until expiry, a Unix ns time or 0)
// into the memory tier if the policy says so and memory has no live entry
// for key (memory.Cache.SetClean).
func (c *Cache) promote(key, value []byte, expiry int64) {
	switch {
	case c.opts.Promotion == PromoteNever:
		return
	case c.opts.Promotion == PromoteSecondHit && !c.promo.second(xxhash.Sum64(key), len(value)):
		return
	}
	ok := c.mem.SetClean(key, value, expiryTime(expiry))
	c.disks.kick() // promote runs only on a disk hit: c.disks is set
	if ok {
		c.c.promotions.Add(1)
	}
}

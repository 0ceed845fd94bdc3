package admission

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
)

// FrequencyFilter is a TinyLFU admission filter: it admits a key once its
// estimated number of accesses in the current window reaches MinFrequency,
// so keys seen once (one-hit wonders) stay off the disk.
//
// Algorithm. Each key's 64-bit hash is mixed with a per-filter random seed
// (so clients cannot aim keys at chosen counters) and picks a shard, then
// inside it a doorkeeper position set and a block of four 64-bit words. Each
// word is one row of a count-min sketch: the key's counter in row i is one
// of the 16 four-bit counters of word i, chosen by four more hash bits. A
// Record first sets the key's 3 bits in the doorkeeper, a Bloom filter
// whose bits for one key share a cache line; only
// a key the doorkeeper already holds increments the sketch, with the
// conservative update (only the counters at the minimum grow, saturating at
// 15). The estimate is the minimum of the four counters plus one if the
// doorkeeper holds the key. After Window/Shards Records a shard halves all
// its counters and clears its doorkeeper, so old popularity fades and the
// doorkeeper never fills up. A counter block is one 32-byte span and a
// doorkeeper block one 64-byte line, so a Record or an Admit touches about
// two cache lines.
//
// Memory: 8 bytes per configured key for the sketch, one byte per window
// sample for the doorkeeper (8 bits per sample: a few percent false
// positives when the whole window is distinct keys, far fewer otherwise). Defaults:
// 2 MiB + 2.5 MiB.
//
// Concurrency. Counters are updated with CAS on their word and doorkeeper
// bits with atomic OR; there is no lock. Each shard counts its Records on a
// counter of its own cache line; the Record that reaches the shard's window
// halves that shard in the calling goroutine (Keys/Shards + Window/Shards/8
// words: amortised a fraction of a word per Record). Updates that race with
// a halving may be lost; the estimate is approximate by design. Admit and
// Record never block and never allocate. The filter starts no goroutine.
type FrequencyFilter struct {
	shards    []freqShard
	shardBits uint
	seed      uint64
	minFreq   int
}

var _ Controller = (*FrequencyFilter)(nil)

// freqShard is one independent sketch and doorkeeper.
type freqShard struct {
	records    atomic.Int64
	_          [56]byte
	counters   []atomic.Uint64 // blocks of 4 words, one per sketch row
	door       []atomic.Uint64 // doorkeeper bits
	blocks     uint64
	doorBlocks uint64
	window     int64
	_          [64 - 8]byte
}

const (
	rows         = 4
	doorProbes   = 3
	doorBitsEach = 8 // doorkeeper bits per window sample
	maxCount     = 15
	halveMask    = 0x7777777777777777
)

// NewFrequencyFilter returns an empty filter. It applies EnsureDefaults to
// a copy of o, then Validate.
func NewFrequencyFilter(o FrequencyOptions) (*FrequencyFilter, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	f := &FrequencyFilter{
		shards:    make([]freqShard, o.Shards),
		shardBits: uint(bits.TrailingZeros(uint(o.Shards))),
		seed:      o.Seed,
		minFreq:   o.MinFrequency,
	}
	if f.seed == 0 {
		f.seed = rand.Uint64() | 1
	}
	words := o.Keys / o.Shards / rows * rows
	doorBlocks := (o.Window*doorBitsEach/int64(o.Shards) + doorBlockBits - 1) / doorBlockBits
	for i := range f.shards {
		s := &f.shards[i]
		s.counters = make([]atomic.Uint64, words)
		s.door = make([]atomic.Uint64, doorBlocks*doorBlockWords)
		s.blocks = uint64(words / rows)
		s.doorBlocks = uint64(doorBlocks)
		s.window = max(1, o.Window/int64(o.Shards))
	}
	return f, nil
}

// mix is the splitmix64 finalizer: every output bit depends on every input
// bit. locate applies it to the key hash XOR the filter's seed.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// locate returns the shard and the first word of the key's block. The
// shard takes the top bits of h, the block the next ones, the four counter
// nibbles the lowest 16.
func (f *FrequencyFilter) locate(hash uint64) (h uint64, s *freqShard, base uint64) {
	h = mix(hash ^ f.seed)
	s = &f.shards[h>>(64-f.shardBits)&(1<<f.shardBits-1)]
	blk, _ := bits.Mul64(h<<f.shardBits, s.blocks)
	return h, s, blk * rows
}

// Record implements Controller: it counts one access to the key.
func (f *FrequencyFilter) Record(hash uint64) {
	h, s, base := f.locate(hash)
	if s.doorkeep(h) {
		increment(s.block(base), h)
	}
	if s.records.Add(1) == s.window {
		s.halve()
		s.records.Add(-s.window)
	}
}

// Admit implements Controller: Admitted if the key's estimated frequency
// is at least MinFrequency, Rejected otherwise. size is not used.
func (f *FrequencyFilter) Admit(hash uint64, _ int) Decision {
	if f.Frequency(hash) >= f.minFreq {
		return Admitted
	}
	return Rejected
}

// Charge implements Controller; the filter does not meter bytes.
func (f *FrequencyFilter) Charge(int) {}

// Frequency returns the key's estimated accesses in the current window, in
// [0, 16]. It may overestimate (hash collisions), never underestimates
// accesses recorded since the last halving, barring races with it.
func (f *FrequencyFilter) Frequency(hash uint64) int {
	h, s, base := f.locate(hash)
	n := int(estimate(s.block(base), h))
	if s.inDoor(h) {
		n++
	}
	return n
}

// String describes the filter's configuration.
func (f *FrequencyFilter) String() string {
	s := &f.shards[0]
	return fmt.Sprintf("admission: frequency filter min %d, %d shards × (%d counter blocks, %d doorkeeper blocks, window %d)",
		f.minFreq, len(f.shards), s.blocks, s.doorBlocks, s.window)
}

// nibble returns the bit shift of the key's counter in row i.
func nibble(h uint64, i int) uint {
	return uint(h>>(4*uint(i))&15) * 4
}

// block returns the key's four counter words, one per sketch row.
func (s *freqShard) block(base uint64) *[rows]atomic.Uint64 {
	return (*[rows]atomic.Uint64)(s.counters[base : base+rows])
}

// estimate returns the minimum of the key's four counters.
func estimate(blk *[rows]atomic.Uint64, h uint64) uint64 {
	m := uint64(maxCount)
	for i := range blk {
		m = min(m, blk[i].Load()>>nibble(h, i)&15)
	}
	return m
}

// increment adds one to the key's counters that hold the minimum
// (conservative update), saturating at maxCount.
func increment(blk *[rows]atomic.Uint64, h uint64) {
	m := estimate(blk, h)
	if m >= maxCount {
		return
	}
	for i := range blk {
		w, shift := &blk[i], nibble(h, i)
		for {
			old := w.Load()
			if old>>shift&15 != m || w.CompareAndSwap(old, old+1<<shift) {
				break
			}
		}
	}
}

// The doorkeeper is a blocked Bloom filter: a key's doorProbes bits all lie
// in one 512-bit block (one cache line), picked by a second mix of h; each
// bit's position in the block takes 9 more bits of that mix.
const (
	doorBlockWords = 8
	doorBlockBits  = doorBlockWords * 64
)

// doorBlock returns the key's doorkeeper block and the hash whose low bits
// place the probes in it.
func (s *freqShard) doorBlock(h uint64) (blk *[doorBlockWords]atomic.Uint64, probes uint64) {
	g := mix(h + 0x9e3779b97f4a7c15)
	i, _ := bits.Mul64(g, s.doorBlocks)
	base := i * doorBlockWords
	return (*[doorBlockWords]atomic.Uint64)(s.door[base : base+doorBlockWords]), g
}

// doorProbe returns the word in the block and the bit of probe i.
func doorProbe(probes uint64, i int) (word, bit uint64) {
	pos := probes >> (9 * i) % doorBlockBits
	return pos / 64, 1 << (pos % 64)
}

// inDoor reports whether the doorkeeper holds the key.
func (s *freqShard) inDoor(h uint64) bool {
	blk, probes := s.doorBlock(h)
	return hasAll(blk, probes)
}

func hasAll(blk *[doorBlockWords]atomic.Uint64, probes uint64) bool {
	for i := range doorProbes {
		w, bit := doorProbe(probes, i)
		if blk[w].Load()&bit == 0 {
			return false
		}
	}
	return true
}

// doorkeep reports whether the doorkeeper already held the key, adding it
// if not. Reads first, so a hot key dirties no doorkeeper cache line.
func (s *freqShard) doorkeep(h uint64) bool {
	blk, probes := s.doorBlock(h)
	if hasAll(blk, probes) {
		return true
	}
	for i := range doorProbes {
		w, bit := doorProbe(probes, i)
		blk[w].Or(bit)
	}
	return false
}

// halve divides every counter by two and clears the doorkeeper.
func (s *freqShard) halve() {
	for i := range s.counters {
		w := &s.counters[i]
		for {
			old := w.Load()
			if old == 0 || w.CompareAndSwap(old, old>>1&halveMask) {
				break
			}
		}
	}
	for i := range s.door {
		s.door[i].Store(0)
	}
}

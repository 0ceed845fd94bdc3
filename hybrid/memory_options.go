package hybrid

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"time"
)

// ErrInvalidMemoryOptions is wrapped by every problem MemoryOptions.Validate
// reports. (It lives here rather than in errors.go because the memory tier
// was written on its own branch; move it when the files meet.)
var ErrInvalidMemoryOptions = errors.New("hybrid: invalid memory options")

// MemoryPolicy names an eviction policy of the memory tier.
type MemoryPolicy string

// The eviction policies. See the Memory doc comment for how each behaves on
// a hit and under the shard lock.
const (
	// MemoryS3FIFO: small FIFO (~5% of the bytes), main FIFO with
	// reinsertion, ghost queue of hashes. Scan-resistant; a hit takes no
	// lock. The default.
	MemoryS3FIFO MemoryPolicy = "s3fifo"
	// MemoryLRU: least recently used. A hit copies without a lock, then
	// takes the shard's lock briefly to move the entry to the front.
	MemoryLRU MemoryPolicy = "lru"
	// MemoryFIFO: first in, first out. A hit changes nothing.
	MemoryFIFO MemoryPolicy = "fifo"
)

// Defaults and limits of MemoryOptions.
const (
	// MemoryDefaultCapacity is Capacity when it is left zero.
	MemoryDefaultCapacity = 64 << 20
	// MemoryDefaultBlockSize is BlockSize when it is left zero.
	MemoryDefaultBlockSize = 256
	// memDefaultMinShard: default Shards is lowered until each shard holds
	// at least this much, so that a 1 MiB slice still fits (see maxEntry).
	memDefaultMinShard = 4 << 20
	memMaxShards       = 1 << 16
	memMinBlockSize    = 64
	memMaxBlockSize    = 64 << 10
	memMinShare        = 4 << 10
)

// MemoryOptions configures a Memory. The zero value, after EnsureDefaults,
// is a valid 64 MiB S3-FIFO tier.
type MemoryOptions struct {
	// Capacity bounds the bytes charged for entries: keys, values, the
	// unused tail of each entry's last block and a fixed per-entry overhead
	// for the index, slot and ghost (see Memory). Default 64 MiB.
	Capacity int64 `yaml:"capacity"`
	// Policy is the eviction policy: "s3fifo" (default), "lru" or "fifo".
	Policy MemoryPolicy `yaml:"policy"`
	// Shards is the number of independently locked shards, a power of two;
	// each gets Capacity/Shards bytes. Default: the least power of two ≥
	// 4×GOMAXPROCS, halved while a shard would get less than 4 MiB.
	Shards int `yaml:"shards"`
	// BlockSize is the unit in which entry bytes are allocated, a power of
	// two in [64, 64 KiB]. Smaller wastes less per entry (the waste is
	// charged); larger means fewer, longer copies. Default 256.
	BlockSize int `yaml:"block_size"`
	// OnEvict, if set, is called for each entry the policy evicts to make
	// room (not for Delete, expiry or overwrite, and not for entries found
	// expired when evicted): the hook for write-on-eviction to the disk
	// tier. It gets the entry's key (borrowed), expiry and value length,
	// and copies the value out only if it keeps it (Evicted.CopyValue): a
	// hook that refuses the entry after looking at key and size costs no
	// copy. The Evicted is valid only during the call. It runs with the
	// shard's write lock held: it must not block (hand off to a bounded
	// queue that drops when full) and must not call back into the Memory,
	// which would deadlock. Default nil.
	OnEvict func(Evicted) `yaml:"-"`
	// Now returns the current time in unix nanoseconds. It is called only
	// when a lookup finds an entry that has an expiry, and when an entry
	// with an expiry is set or evicted. The Memory starts no goroutines, so
	// it owns no coarse clock: a caller that sets expiries on most entries
	// should pass one it owns (a cached timestamp updated by a ticker costs
	// ~3 ns here against ~80 ns for time.Now). Default: time.Now.
	Now func() int64 `yaml:"-"`
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *MemoryOptions) EnsureDefaults() *MemoryOptions {
	if o.Capacity == 0 {
		o.Capacity = MemoryDefaultCapacity
	}
	if o.Policy == "" {
		o.Policy = MemoryS3FIFO
	}
	if o.BlockSize == 0 {
		o.BlockSize = MemoryDefaultBlockSize
	}
	if o.Shards == 0 {
		o.Shards = memDefaultShards(o.Capacity, runtime.GOMAXPROCS(0))
	}
	if o.Now == nil {
		o.Now = memWallClock
	}
	return o
}

func memWallClock() int64 { return time.Now().UnixNano() }

// memDefaultShards returns the least power of two ≥ 4×procs, halved while
// a shard would hold less than memDefaultMinShard.
func memDefaultShards(capacity int64, procs int) int {
	n := 1
	for n < 4*procs && n < memMaxShards {
		n <<= 1
	}
	for n > 1 && capacity/int64(n) < memDefaultMinShard {
		n >>= 1
	}
	return n
}

// Validate reports every problem with o at once (errors.Join), each
// wrapping ErrInvalidMemoryOptions. Call it after EnsureDefaults.
func (o *MemoryOptions) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidMemoryOptions}, args...)...))
	}
	switch o.Policy {
	case MemoryS3FIFO, MemoryLRU, MemoryFIFO:
	default:
		bad("policy %q: want s3fifo, lru or fifo", o.Policy)
	}
	if o.Shards < 1 || o.Shards > memMaxShards || bits.OnesCount(uint(o.Shards)) != 1 {
		bad("shards %d: want a power of two in [1, %d]", o.Shards, memMaxShards)
	}
	if o.BlockSize < memMinBlockSize || o.BlockSize > memMaxBlockSize || bits.OnesCount(uint(o.BlockSize)) != 1 {
		bad("block_size %d: want a power of two in [%d, %d]", o.BlockSize, memMinBlockSize, memMaxBlockSize)
	}
	if o.Capacity <= 0 {
		bad("capacity %d: want > 0", o.Capacity)
	} else if o.Shards >= 1 {
		share := o.Capacity / int64(o.Shards)
		if share < memMinShare || share < 8*int64(o.BlockSize) {
			bad("capacity %d over %d shards: want at least max(4 KiB, 8 blocks) per shard", o.Capacity, o.Shards)
		}
		if share/int64(max(o.BlockSize, 1)) >= 1<<31 {
			bad("capacity %d over %d shards: more than 2^31 blocks per shard", o.Capacity, o.Shards)
		}
	}
	if o.Now == nil {
		bad("now: nil (EnsureDefaults sets time.Now)")
	}
	return errors.Join(errs...)
}

package memory

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"time"
)

// ErrInvalidOptions is wrapped by every problem Options.Validate
// reports. (It lives here rather than in errors.go because the memory tier
// was written on its own branch; move it when the files meet.)
var ErrInvalidOptions = errors.New("memory: invalid options")

// Policy names an eviction policy of the memory tier.
type Policy string

// The eviction policies. See the Cache doc comment for how each behaves on
// a hit and under the shard lock.
const (
	// S3FIFO: small FIFO (~5% of the bytes), main FIFO with
	// reinsertion, ghost queue of hashes. Scan-resistant; a hit takes no
	// lock. The default.
	S3FIFO Policy = "s3fifo"
	// LRU: least recently used. A hit copies without a lock, then
	// takes the shard's lock briefly to move the entry to the front.
	LRU Policy = "lru"
	// FIFO: first in, first out. A hit changes nothing.
	FIFO Policy = "fifo"
)

// Defaults and limits of Options.
const (
	// DefaultCapacity is Capacity when it is left zero.
	DefaultCapacity = 256 << 20
	// DefaultPolicy is Policy when it is left empty.
	DefaultPolicy = S3FIFO
	// DefaultBlockSize is BlockSize when it is left zero.
	DefaultBlockSize = 256
	// defaultMinShard: default Shards is lowered until each shard holds
	// at least this much, so that a 1 MiB slice still fits (see maxEntry).
	defaultMinShard = 4 << 20
	maxShards       = 1 << 16
	minBlockSize    = 64
	maxBlockSize    = 64 << 10
	minShare        = 4 << 10
)

// Options configures a Cache. The zero value, after EnsureDefaults,
// is a valid 64 MiB S3-FIFO tier.
type Options struct {
	// Capacity bounds the bytes charged for entries: keys, values, the
	// unused tail of each entry's last block and a fixed per-entry overhead
	// for the index, slot and ghost (see Cache). Default 64 MiB.
	Capacity int64
	// Policy is the eviction policy: "s3fifo" (default), "lru" or "fifo".
	Policy Policy
	// Shards is the number of independently locked shards, a power of two;
	// each gets Capacity/Shards bytes. Default: the least power of two ≥
	// 4×GOMAXPROCS, halved while a shard would get less than 4 MiB.
	Shards int
	// BlockSize is the unit in which entry bytes are allocated, a power of
	// two in [64, 64 KiB]. Smaller wastes less per entry (the waste is
	// charged); larger means fewer, longer copies. Default 256.
	BlockSize int
	// OnEvict, if set, is called for each entry the policy evicts to make
	// room (not for Delete, expiry or overwrite, and not for entries found
	// expired when evicted): the hook for write-on-eviction to the disk
	// tier. It gets the entry's key (borrowed), expiry and value length,
	// and copies the value out only if it keeps it (Evicted.CopyValue): a
	// hook that refuses the entry after looking at key and size costs no
	// copy. The Evicted is valid only during the call. It runs with the
	// shard's write lock held: it must not block (hand off to a bounded
	// queue that drops when full) and must not call back into the Cache,
	// which would deadlock. Default nil.
	OnEvict func(Evicted)
	// Now returns the current time in unix nanoseconds. It is called only
	// when a lookup finds an entry that has an expiry, and when an entry
	// with an expiry is set or evicted. The Cache starts no goroutines, so
	// it owns no coarse clock: a caller that sets expiries on most entries
	// should pass one it owns (a cached timestamp updated by a ticker costs
	// ~3 ns here against ~80 ns for time.Now). Default: time.Now.
	Now func() int64
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Policy == "" {
		o.Policy = DefaultPolicy
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.Shards == 0 {
		o.Shards = defaultShards(o.Capacity, runtime.GOMAXPROCS(0))
	}
	if o.Now == nil {
		o.Now = wallClock
	}
	return o
}

func wallClock() int64 { return time.Now().UnixNano() }

// defaultShards returns the least power of two ≥ 4×procs, halved while
// a shard would hold less than defaultMinShard.
func defaultShards(capacity int64, procs int) int {
	n := 1
	for n < 4*procs && n < maxShards {
		n <<= 1
	}
	for n > 1 && capacity/int64(n) < defaultMinShard {
		n >>= 1
	}
	return n
}

// Validate reports every problem with o at once (errors.Join), each
// wrapping ErrInvalidOptions. Call it after EnsureDefaults.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	switch o.Policy {
	case S3FIFO, LRU, FIFO:
	default:
		bad("policy %q: want s3fifo, lru or fifo", o.Policy)
	}
	if o.Shards < 1 || o.Shards > maxShards || bits.OnesCount(uint(o.Shards)) != 1 {
		bad("shards %d: want a power of two in [1, %d]", o.Shards, maxShards)
	}
	if o.BlockSize < minBlockSize || o.BlockSize > maxBlockSize || bits.OnesCount(uint(o.BlockSize)) != 1 {
		bad("block_size %d: want a power of two in [%d, %d]", o.BlockSize, minBlockSize, maxBlockSize)
	}
	if o.Capacity <= 0 {
		bad("capacity %d: want > 0", o.Capacity)
	} else if o.Shards >= 1 {
		share := o.Capacity / int64(o.Shards)
		if share < minShare || share < 8*int64(o.BlockSize) {
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

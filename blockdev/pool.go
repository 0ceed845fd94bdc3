package blockdev

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// numClasses is the number of pooled size classes: blockSize << 0 up to
// blockSize << (numClasses-1) (4 KiB to 1 GiB for 4 KiB blocks). Larger
// requests are served unpooled.
const numClasses = 19

// Buffer is an aligned buffer from a Pool.
//
// Ownership: the caller that Acquires a Buffer owns it, and B, until it
// calls Release once; after Release neither the Buffer nor any slice of B
// may be touched again (the memory is reused by the next Acquire, or
// unmapped). A Buffer that is never released is leaked until the process
// exits: its memory is off the Go heap, so the GC will not reclaim it.
type Buffer struct {
	// B holds the bytes asked for: len(B) == n, aligned to the pool's block
	// size, with room up to the size class in cap(B). Its contents are
	// unspecified: fresh memory is zero, reused memory is not cleared.
	B []byte

	full   []byte // the whole class-sized aligned region
	mem    []byte // what to unmap: the mapping holding full, nil if heap
	class  int    // size class index, or -1 when unpooled
	pooled bool   // in a free list (guarded by its class's mutex)
}

// Pool hands out aligned buffers in power-of-two size classes from the
// block size upward and keeps released ones for reuse, up to a byte cap.
//
// Memory: on Linux every buffer is its own anonymous mmap (page-aligned,
// off the Go heap, never scanned by the GC, zero from the kernel and never
// cleared again); elsewhere, or if mmap fails, a pointer-free heap slice.
// What Release cannot retain under the cap is unmapped at once.
//
// Concurrency: safe for concurrent use; each class has its own mutex and
// free list (a LIFO stack, so the warmest buffer goes out first). Acquire
// on a retained buffer allocates nothing.
type Pool struct {
	blockSize   int
	shift       int // log2(blockSize)
	maxRetained int64
	retained    atomic.Int64
	closed      atomic.Bool
	hits        atomic.Uint64
	misses      atomic.Uint64
	classes     [numClasses]poolClass
}

type poolClass struct {
	mu   sync.Mutex
	free []*Buffer
	_    [40]byte // keep neighbouring classes' mutexes off one cache line
}

// PoolStats are a Pool's counters.
type PoolStats struct {
	Hits, Misses  uint64 // Acquires served from a free list / newly allocated
	RetainedBytes int64  // bytes held in free lists now
}

// NewPool returns a pool of buffers aligned to blockSize that retains at
// most maxRetained bytes of released buffers.
// REQUIRES: blockSize is a power of two >= 512; maxRetained >= 0.
func NewPool(blockSize int, maxRetained int64) *Pool {
	if blockSize < 512 || blockSize&(blockSize-1) != 0 {
		panic("blockdev: NewPool: block size is not a power of two >= 512")
	}
	return &Pool{blockSize: blockSize, shift: bits.TrailingZeros(uint(blockSize)), maxRetained: max(maxRetained, 0)}
}

// classOf returns the size class for n bytes: the smallest k with
// blockSize<<k >= n.
func (p *Pool) classOf(n int) int {
	if n <= p.blockSize {
		return 0
	}
	return bits.Len(uint(n-1)) - p.shift
}

// Acquire returns a buffer with len(B) == n (n >= 0) aligned to the block
// size. The caller owns it until Release.
func (p *Pool) Acquire(n int) *Buffer {
	n = max(n, 0)
	c := p.classOf(n)
	if c >= numClasses {
		p.misses.Add(1)
		b := newBuffer(roundUp(n, p.blockSize), p.blockSize)
		b.class = -1
		b.B = b.full[:n]
		return b
	}
	cl := &p.classes[c]
	cl.mu.Lock()
	if k := len(cl.free); k > 0 {
		b := cl.free[k-1]
		cl.free[k-1] = nil
		cl.free = cl.free[:k-1]
		b.pooled = false
		cl.mu.Unlock()
		p.retained.Add(-int64(len(b.full)))
		p.hits.Add(1)
		b.B = b.full[:n]
		return b
	}
	cl.mu.Unlock()
	p.misses.Add(1)
	b := newBuffer(p.blockSize<<c, p.blockSize)
	b.class = c
	b.B = b.full[:n]
	return b
}

// Release gives b back. It is retained for reuse if the pool's cap allows,
// freed otherwise. Releasing nil is a no-op; releasing a Buffer twice with
// no Acquire in between is detected and ignored (with one in between it
// cannot be told from a legitimate release: a bug the caller must avoid).
func (p *Pool) Release(b *Buffer) {
	if b == nil {
		return
	}
	if b.class < 0 {
		b.B = nil
		freeBuffer(b)
		return
	}
	cl := &p.classes[b.class]
	cl.mu.Lock()
	if b.pooled || b.full == nil { // released twice
		cl.mu.Unlock()
		return
	}
	b.B = nil
	if p.closed.Load() || !p.reserve(int64(len(b.full))) {
		cl.mu.Unlock()
		freeBuffer(b)
		return
	}
	b.pooled = true
	cl.free = append(cl.free, b)
	cl.mu.Unlock()
}

// reserve counts size more retained bytes if that stays within the cap.
func (p *Pool) reserve(size int64) bool {
	if p.retained.Add(size) > p.maxRetained {
		p.retained.Add(-size)
		return false
	}
	return true
}

// Close frees every retained buffer; later Releases free theirs at once.
// Buffers still acquired stay valid until released.
func (p *Pool) Close() {
	p.closed.Store(true)
	for i := range p.classes {
		cl := &p.classes[i]
		cl.mu.Lock()
		free := cl.free
		cl.free = nil
		cl.mu.Unlock()
		for _, b := range free {
			p.retained.Add(-int64(len(b.full)))
			freeBuffer(b)
		}
	}
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	return PoolStats{Hits: p.hits.Load(), Misses: p.misses.Load(), RetainedBytes: p.retained.Load()}
}

// BlockSize is the alignment of every buffer from p.
func (p *Pool) BlockSize() int { return p.blockSize }

func roundUp(n, bs int) int { return (n + bs - 1) &^ (bs - 1) }

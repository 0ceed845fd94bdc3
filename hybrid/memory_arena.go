package hybrid

import (
	"sync/atomic"
	"unsafe"
)

// memArena holds the key and value bytes of one memory-tier shard.
//
// The bytes live in fixed-size blocks carved out of large chunks (anonymous
// mmap on Linux, heap []byte elsewhere: neither holds pointers, so the
// garbage collector never scans them). An entry's key and value are written
// back to back into a chain of blocks; next[b] is the block after b in its
// chain, or the next free block when b is free. Any free block serves any
// entry, so there is no external fragmentation and no slab calcification:
// the only waste is the unused tail of an entry's last block, and that tail
// is charged to the entry (see memShard.charge), which keeps the byte bound
// honest. Blocks handed out fresh from a chunk, and chains freed whole, are
// mostly contiguous, so copies run over spans of many blocks at once.
//
// memArena is not safe for concurrent use: the shard lock guards it (reads
// under the read lock, allocation and freeing under the write lock).
type memArena struct {
	bs         int  // block size in bytes, a power of two
	bsShift    uint // log2(bs)
	chunkShift uint // log2(blocks per chunk)
	chunks     [][]byte
	next       []uint32 // per block: successor in its chain or in the free list
	free       uint32   // head of the free list, memNil when empty
	nfree      int      // blocks in the free list
	fresh      uint32   // blocks ever handed out (the rest of the chunks is untouched)
}

// memNil marks the end of a chain or list of blocks or slots.
const memNil = ^uint32(0)

// Chunk size bounds: big enough that chunk count stays small, small enough
// that the last, partly used chunk of each shard wastes little.
const (
	memMinChunk = 64 << 10
	memMaxChunk = 1 << 20
)

func newMemArena(blockSize int, share int64) memArena {
	chunk := memMinChunk
	for chunk < memMaxChunk && int64(chunk) < share {
		chunk <<= 1
	}
	if chunk < blockSize {
		chunk = blockSize
	}
	a := memArena{bs: blockSize, free: memNil}
	for 1<<a.bsShift < blockSize {
		a.bsShift++
	}
	for 1<<(a.bsShift+a.chunkShift) < chunk {
		a.chunkShift++
	}
	return a
}

// alloc takes n blocks, chains them and returns the first and last (memNil,
// memNil for n == 0). It reuses freed blocks first, then fresh ones, mapping
// a new chunk when needed. It fails only if a chunk cannot be mapped.
//
// The free list's links already chain its blocks, so the first k free
// blocks are taken as they stand: a walk of k-1 links and one store, not a
// relink per block (issue 4: per-block take was 5% of the bench's CPU).
func (a *memArena) alloc(n int) (first, last uint32, ok bool) {
	if n <= 0 {
		return memNil, memNil, true
	}
	first, last = memNil, memNil
	have := min(n, a.nfree)
	if have > 0 {
		first, last = a.free, a.free
		for i := 1; i < have; i++ {
			last = a.next[last]
		}
		a.free = a.next[last]
		a.nfree -= have
	}
	for ; have < n; have++ {
		b, ok := a.takeFresh()
		if !ok {
			if first != memNil {
				a.next[last] = memNil
				a.release(first, last, have)
			}
			return memNil, memNil, false
		}
		if first == memNil {
			first = b
		} else {
			a.next[last] = b
		}
		last = b
	}
	a.next[last] = memNil
	return first, last, true
}

// takeFresh returns a block never handed out before, mapping a chunk when
// the mapped ones are used up.
func (a *memArena) takeFresh() (uint32, bool) {
	if int(a.fresh) == len(a.chunks)<<a.chunkShift {
		if !a.grow() {
			return memNil, false
		}
	}
	b := a.fresh
	a.fresh++
	return b, true
}

func (a *memArena) grow() bool {
	if uint64(len(a.chunks)+1)<<a.chunkShift >= uint64(memNil) {
		return false
	}
	c, err := memMapChunk(1 << (a.bsShift + a.chunkShift))
	if err != nil {
		return false
	}
	a.chunks = append(a.chunks, c)
	a.next = append(a.next, make([]uint32, 1<<a.chunkShift)...)
	return true
}

// release returns the chain first..last of n blocks to the free list in
// O(1); the chain keeps its order, so contiguous runs stay contiguous for
// reuse.
func (a *memArena) release(first, last uint32, n int) {
	if first == memNil {
		return
	}
	a.next[last] = a.free
	a.free = first
	a.nfree += n
}

// span returns the bytes of the longest run of physically contiguous blocks
// of a chain starting at block b, at most limit bytes, and the block that
// follows the run in the chain.
func (a *memArena) span(b uint32, limit int) ([]byte, uint32) {
	chunkMask := uint32(1)<<a.chunkShift - 1
	c := a.chunks[b>>a.chunkShift]
	off := int(b&chunkMask) << a.bsShift
	n := a.bs
	for n < limit && a.next[b] == b+1 && (b+1)&chunkMask != 0 {
		b++
		n += a.bs
	}
	if n > limit {
		n = limit
	}
	return c[off : off+n : off+n], a.next[b]
}

// memHeader opens an entry's first block: what a hit needs, so that a hit
// reads the index and then this one block, never the slot. It sits at
// offset 0 of a block (blocks are ≥ 64 bytes and 64-byte aligned), so it
// never straddles two blocks and its atomic word is aligned.
type memHeader struct {
	expiry int64  // unix nanoseconds, 0 for none
	klen   uint32 // key bytes after the header
	vlen   uint32 // value bytes after the key
	// freq is S3-FIFO's hit count (see memSlot), bumped under the read lock.
	freq atomic.Uint32
	// contig is 1 when the chain is one run of consecutive blocks in one
	// chunk, so that header, key and value are one slice (see run).
	contig uint32
}

// memHeaderSize is the bytes the header takes in front of the key.
const memHeaderSize = int(unsafe.Sizeof(memHeader{}))

// header returns the header in block b. The arena memory holds no Go
// pointers, and the chunk outlives every use (chunks are freed only by
// releaseAll, under the shard's write lock).
func (a *memArena) header(b uint32) *memHeader {
	c := a.chunks[b>>a.chunkShift]
	off := int(b&(1<<a.chunkShift-1)) << a.bsShift
	return (*memHeader)(unsafe.Pointer(&c[off]))
}

// run returns the n bytes starting at block b. REQUIRES: the chain from b
// is contiguous (memHeader.contig) and at least n bytes long.
func (a *memArena) run(b uint32, n int) []byte {
	c := a.chunks[b>>a.chunkShift]
	off := int(b&(1<<a.chunkShift-1)) << a.bsShift
	return c[off : off+n : off+n]
}

// contiguous reports whether the chain of n blocks from first is one run of
// consecutive blocks in one chunk.
func (a *memArena) contiguous(first uint32, n int) bool {
	chunkMask := uint32(1)<<a.chunkShift - 1
	if int(first&chunkMask)+n > int(chunkMask)+1 {
		return false
	}
	for b, i := first, 1; i < n; b, i = b+1, i+1 {
		if a.next[b] != b+1 {
			return false
		}
	}
	return true
}

// releaseAll unmaps every chunk; the arena is unusable afterwards.
func (a *memArena) releaseAll() {
	for _, c := range a.chunks {
		memUnmapChunk(c)
	}
	a.chunks, a.next, a.free, a.nfree, a.fresh = nil, nil, memNil, 0, 0
}

// memCursor reads or writes an entry's byte stream (key then value) across
// its chain of blocks. It lives on the caller's stack.
type memCursor struct {
	a    *memArena
	blk  uint32 // next block to load
	cur  []byte // loaded, not yet consumed bytes
	left int    // bytes of the stream not yet loaded
}

func (a *memArena) cursor(first uint32, length int) memCursor {
	return memCursor{a: a, blk: first, left: length}
}

// take consumes and returns up to n bytes of the stream; fewer when a run
// of contiguous blocks ends, none at the end of the stream.
func (c *memCursor) take(n int) []byte {
	if len(c.cur) == 0 {
		if c.left == 0 {
			return nil
		}
		c.cur, c.blk = c.a.span(c.blk, c.left)
		c.left -= len(c.cur)
	}
	if n > len(c.cur) {
		n = len(c.cur)
	}
	p := c.cur[:n]
	c.cur = c.cur[n:]
	return p
}

// write copies p into the stream.
func (c *memCursor) write(p []byte) {
	for len(p) > 0 {
		n := copy(c.take(len(p)), p)
		p = p[n:]
	}
}

// equal reports whether the next len(p) bytes of the stream equal p.
func (c *memCursor) equal(p []byte) bool {
	for len(p) > 0 {
		q := c.take(len(p))
		if len(q) == 0 || string(q) != string(p[:len(q)]) {
			return false
		}
		p = p[len(q):]
	}
	return true
}

// appendTo appends the next n bytes of the stream to dst.
func (c *memCursor) appendTo(dst []byte, n int) []byte {
	for n > 0 {
		q := c.take(n)
		if len(q) == 0 {
			break
		}
		dst = append(dst, q...)
		n -= len(q)
	}
	return dst
}

// skip consumes n bytes of the stream.
func (c *memCursor) skip(n int) {
	for n > 0 {
		q := c.take(n)
		if len(q) == 0 {
			return
		}
		n -= len(q)
	}
}

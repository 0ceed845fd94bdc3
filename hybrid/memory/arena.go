package memory

import (
	"sync/atomic"
	"unsafe"
)

// arena holds the key and value bytes of one memory-tier shard.
//
// The bytes live in fixed-size blocks carved out of large chunks (anonymous
// mmap on Linux, heap []byte elsewhere: neither holds pointers, so the
// garbage collector never scans them). An entry's key and value are written
// back to back into a chain of blocks; next[b] is the block after b in its
// chain, or the next free block when b is free. Any free block serves any
// entry, so there is no external fragmentation and no slab calcification:
// the only waste is the unused tail of an entry's last block, and that tail
// is charged to the entry (see shard.charge), which keeps the byte bound
// honest. Blocks handed out fresh from a chunk, and chains freed whole, are
// mostly contiguous, so copies run over spans of many blocks at once.
//
// Lock-free readers. The shard's byte bound caps the blocks in use at
// share/(block+4), so the arena sizes its chunk table and next array for
// that many once, at construction, and never moves them: chunk pointers are
// published atomically as chunks are mapped, next lives off-heap beside the
// chunks (mapped lazily, untouched pages cost nothing), and nothing is
// unmapped before the Cache is unreachable (Close only gives the pages
// back: see drop). A reader racing a writer may therefore read stale or
// half-written bytes, which the shard's sequence counter makes it discard,
// but never an address outside a mapping: every accessor below checks its
// block number against the fixed bounds and returns nil rather than index
// out of range. Allocation and freeing need the shard's write lock.
type arena struct {
	bs         int                    // block size in bytes, a power of two
	bsShift    uint                   // log2(bs)
	chunkShift uint                   // log2(blocks per chunk)
	chunks     []atomic.Pointer[byte] // fixed length; nil until mapped
	nchunks    int                    // chunks mapped (the writer's)
	next       []uint32               // per block: successor in its chain or in the free list
	nextMem    []byte                 // the mapping behind next
	pins       []atomic.Uint32        // per block: borrowers of the entry it starts (see pin.go)
	pinMem     []byte                 // the mapping behind pins
	free       uint32                 // head of the free list, noBlock when empty
	nfree      int                    // blocks in the free list
	fresh      uint32                 // blocks ever handed out (the rest of the chunks is untouched)
	dropped    bool                   // drop ran: allocate nothing more
	// scatter (tests only, set before the first Set) takes free blocks as
	// they come, not runs, so that tests see entries stored in pieces.
	scatter bool
	// inOrder is set while makeRoom frees victims for one entry: release
	// then links each chain after the previous one (orderTail is the last
	// block of the chains released so far, noBlock before the first), so
	// the free list starts with them in the order they were evicted.
	inOrder   bool
	orderTail uint32
	// offHeap is set while every mapping came from mmap: only then may
	// readers skip the lock (heap bytes read racily would be data races
	// under the race detector's eyes, and are formally so under Go's
	// memory model).
	offHeap atomic.Bool
}

// noBlock marks the end of a chain or list of blocks or slots.
const noBlock = ^uint32(0)

// Chunk size bounds: big enough that chunk count stays small, small enough
// that the last, partly used chunk of each shard wastes little.
const (
	minChunk = 64 << 10
	maxChunk = 1 << 20
)

// init sets up an empty arena for a shard of share bytes.
func (a *arena) init(blockSize int, share int64) {
	chunk := minChunk
	for chunk < maxChunk && int64(chunk) < share {
		chunk <<= 1
	}
	if chunk < blockSize {
		chunk = blockSize
	}
	a.bs, a.free = blockSize, noBlock
	for 1<<a.bsShift < blockSize {
		a.bsShift++
	}
	for 1<<(a.bsShift+a.chunkShift) < chunk {
		a.chunkShift++
	}
	// Every block in use is charged at least bs+4 bytes of the share. No
	// chunk beyond that: chunks are populated when mapped (resident at
	// once), and the memory tier's term in the process's budget is its
	// Capacity. A spare chunk per shard would let large entries be stored
	// as runs more often (a chunk's tail too short for the next run is left
	// to smaller entries: three 256 KiB entries to a 1 MiB chunk), but cost
	// up to a quarter more than Capacity at the default 4 MiB shares
	// (TestArenaWithinCapacity).
	perChunk := int64(1) << a.chunkShift
	maxBlocks := share/int64(blockSize+4) + 1
	maxChunks := min((maxBlocks+perChunk-1)/perChunk, int64(noBlock)>>a.chunkShift)
	a.chunks = make([]atomic.Pointer[byte], maxChunks)
	var off bool
	a.nextMem, off = mapChunk(int(maxChunks*perChunk) * 4)
	a.next = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(a.nextMem))), maxChunks*perChunk)
	var pinOff bool
	a.pinMem, pinOff = mapChunk(int(maxChunks*perChunk) * 4)
	a.pins = unsafe.Slice((*atomic.Uint32)(unsafe.Pointer(unsafe.SliceData(a.pinMem))), maxChunks*perChunk)
	a.offHeap.Store(off && pinOff)
}

// alloc takes n blocks, chains them and returns the first and last (noBlock,
// noBlock for n == 0). It reuses freed blocks first, then fresh ones, mapping
// a new chunk when needed. It fails only if a chunk cannot be mapped.
//
// The free list's links already chain its blocks, so the first k free
// blocks are taken as they stand: a walk of k-1 links and one store, not a
// relink per block (taking blocks one at a time cost 5% of the CPU of a
// write-heavy benchmark).
func (a *arena) alloc(n int) (first, last uint32, ok bool) {
	if n <= 0 {
		return noBlock, noBlock, true
	}
	if n > 1 && !a.scatter {
		if first, last, ok = a.takeRun(n); ok {
			return first, last, true
		}
	}
	if n > 1 && (a.nfree < n || !a.scatter) {
		if first, last, ok = a.allocRun(n); ok {
			return first, last, true
		}
	}
	first, last = noBlock, noBlock
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
			if first != noBlock {
				a.next[last] = noBlock
				a.release(first, last, have)
			}
			return noBlock, noBlock, false
		}
		if first == noBlock {
			first = b
		} else {
			a.next[last] = b
		}
		last = b
	}
	a.next[last] = noBlock
	return first, last, true
}

// takeRun takes n blocks that are one run of consecutive blocks in one
// chunk off the free list, so that the entry is contiguous (a hit can lend
// it whole). It looks at the list's first runs only, at most runSearch×n
// blocks: the chains of the victims just evicted to make room for this
// entry are at its head. It fails, changing nothing, when none of those
// runs is n blocks long; alloc then takes fresh blocks as one run, or
// blocks as they come.
//
// Taking the first n free blocks as they stood split entries wherever
// the list's head run was shorter (a chunk's leftover tail, or a smaller
// victim's chain): after churn, 20% of 256 KiB entries (80% of 64–320 KiB
// ones) were stored in pieces, and every hit on them was then copied (now
// lent in pieces, Value.Spans, such a hit still costs a socket writer one
// buffer more per piece).
func (a *arena) takeRun(n int) (first, last uint32, ok bool) {
	if a.nfree < n {
		return noBlock, noBlock, false
	}
	chunkMask := uint32(1)<<a.chunkShift - 1
	pred, b := noBlock, a.free
	for steps := 0; b != noBlock && steps < runSearch*n; {
		start, k := b, 1
		for k < n && a.next[b] == b+1 && (b+1)&chunkMask != 0 {
			b++
			k++
		}
		steps += k
		if k == n {
			if pred == noBlock {
				a.free = a.next[b]
			} else {
				a.next[pred] = a.next[b]
			}
			a.next[b] = noBlock
			a.nfree -= n
			return start, b, true
		}
		pred, b = b, a.next[b]
	}
	return noBlock, noBlock, false
}

// runSearch bounds takeRun's walk, in multiples of the blocks wanted.
const runSearch = 4

// takeFresh returns a block never handed out before, mapping a chunk when
// the mapped ones are used up.
func (a *arena) takeFresh() (uint32, bool) {
	if int(a.fresh) == a.nchunks<<a.chunkShift {
		if !a.grow() {
			return noBlock, false
		}
	}
	b := a.fresh
	a.fresh++
	return b, true
}

// allocRun takes n fresh blocks as one run inside one chunk, so that the
// entry is contiguous (one slice: a hit can lend it whole, see Cache.Lend).
// When the current chunk has fewer than n fresh blocks left, they go to the
// free list (any entry may use them) and the run starts a new chunk. It
// fails, changing nothing, when n exceeds a chunk or no chunk can be mapped;
// alloc then takes blocks as they come. Filling chunks in order, a quarter
// of 256 KiB entries crossed a chunk boundary and could not be lent.
func (a *arena) allocRun(n int) (first, last uint32, ok bool) {
	perChunk := 1 << a.chunkShift
	if n > perChunk {
		return noBlock, noBlock, false
	}
	end := uint32(a.nchunks << a.chunkShift)
	if int(end-a.fresh) < n {
		if !a.grow() {
			return noBlock, noBlock, false
		}
		if tail := int(end - a.fresh); tail > 0 {
			for b := a.fresh; b < end-1; b++ {
				a.next[b] = b + 1
			}
			a.release(a.fresh, end-1, tail)
			a.fresh = end
		}
	}
	first, last = a.fresh, a.fresh+uint32(n)-1
	for b := first; b < last; b++ {
		a.next[b] = b + 1
	}
	a.next[last] = noBlock
	a.fresh += uint32(n)
	return first, last, true
}

func (a *arena) grow() bool {
	if a.dropped || a.nchunks == len(a.chunks) {
		return false
	}
	c, off := mapArenaChunk(1 << (a.bsShift + a.chunkShift))
	if !off {
		a.offHeap.Store(false)
	}
	a.chunks[a.nchunks].Store(unsafe.SliceData(c))
	a.nchunks++
	return true
}

// release returns the chain first..last of n blocks to the free list in
// O(1); the chain keeps its order, so contiguous runs stay contiguous for
// reuse.
func (a *arena) release(first, last uint32, n int) {
	if first == noBlock {
		return
	}
	a.nfree += n
	if a.inOrder && a.orderTail != noBlock {
		a.next[last] = a.next[a.orderTail]
		a.next[a.orderTail] = first
		a.orderTail = last
		return
	}
	a.next[last] = a.free
	a.free = first
	if a.inOrder {
		a.orderTail = last
	}
}

// releaseInOrder makes release keep the chains it frees in the order it
// frees them, at the head of the free list, until endInOrder.
//
// Why. makeRoom evicts the oldest entries first, and entries inserted one
// after another took blocks one after another: victims freed in order lie
// in order. Pushed each at the head, their chains came out reversed, so
// the free list held no run longer than one victim's chain, and an entry
// larger than its victims took them as they came: after churn of 1 KiB
// entries a 1 MiB value lay in about 740 pieces (93 for 256 KiB), and a
// hit on it wrote them one by one. Kept in order, consecutive chains make
// one run (TestLargeAfterSmallChurn).
func (a *arena) releaseInOrder() { a.inOrder, a.orderTail = true, noBlock }

// endInOrder ends releaseInOrder.
func (a *arena) endInOrder() { a.inOrder = false }

// chunkBytes returns the size of every chunk.
func (a *arena) chunkBytes() int { return 1 << (a.bsShift + a.chunkShift) }

// chunk returns chunk ci, nil if it is out of range or not mapped yet.
func (a *arena) chunk(ci uint32) []byte {
	if int(ci) >= len(a.chunks) {
		return nil
	}
	p := a.chunks[ci].Load()
	if p == nil {
		return nil
	}
	return unsafe.Slice(p, a.chunkBytes())
}

// span returns the bytes of the longest run of physically contiguous blocks
// of a chain starting at block b, at most limit bytes, and the block that
// follows the run in the chain; nil if b is not a mapped block.
func (a *arena) span(b uint32, limit int) ([]byte, uint32) {
	c := a.chunk(b >> a.chunkShift)
	if c == nil || limit <= 0 {
		return nil, noBlock
	}
	chunkMask := uint32(1)<<a.chunkShift - 1
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

// header opens an entry's first block: what a hit needs, so that a hit
// reads the index and then this one block, never the slot. It sits at
// offset 0 of a block (blocks are ≥ 64 bytes and 64-byte aligned), so it
// never straddles two blocks.
type header struct {
	expiry int64  // unix nanoseconds, 0 for none
	klen   uint32 // key bytes after the header
	vlen   uint32 // value bytes after the key
	// contig is 1 when the chain is one run of consecutive blocks in one
	// chunk, so that header, key and value are one slice (see run).
	contig uint32
	_      uint32 // was the hit count, now in the index (entryRef.freq)
}

// headerSize is the bytes the header takes in front of the key.
const headerSize = int(unsafe.Sizeof(header{}))

// locate returns block b's chunk and b's offset in it; nil if b is not a
// mapped block.
func (a *arena) locate(b uint32) ([]byte, int) {
	return a.chunk(b >> a.chunkShift), int(b&(1<<a.chunkShift-1)) << a.bsShift
}

// touch loads a word of the block's second and third cache lines (blocks
// of 256 bytes or more), so that they are fetched while the header's line
// still is: a hit of a small entry then waits for about one round trip to
// memory for its bytes, not one per line (the value copy finds them
// cached). Atomic loads, because the compiler drops plain loads whose value
// is unused. REQUIRES: c[off:off+bs] is the block.
func (a *arena) touch(c []byte, off int) {
	if a.bs >= 256 && off+192 <= len(c) {
		atomic.LoadUint32((*uint32)(unsafe.Pointer(&c[off+64])))
		atomic.LoadUint32((*uint32)(unsafe.Pointer(&c[off+128])))
	}
}

// header returns the header in block b, nil if b is not a mapped block. The
// arena memory holds no Go pointers, and a chunk outlives every use.
func (a *arena) header(b uint32) *header {
	c := a.chunk(b >> a.chunkShift)
	if c == nil {
		return nil
	}
	off := int(b&(1<<a.chunkShift-1)) << a.bsShift
	return (*header)(unsafe.Pointer(&c[off]))
}

// run returns the n bytes starting at block b, nil if they would pass the
// end of b's chunk or b is not mapped. REQUIRES (for the bytes to be the
// entry's): the chain from b is contiguous (header.contig) and at least
// n bytes long.
func (a *arena) run(b uint32, n int) []byte {
	c := a.chunk(b >> a.chunkShift)
	off := int(b&(1<<a.chunkShift-1)) << a.bsShift
	if c == nil || n < 0 || n > len(c)-off {
		return nil
	}
	return c[off : off+n : off+n]
}

// contiguous reports whether the chain of n blocks from first is one run of
// consecutive blocks in one chunk.
func (a *arena) contiguous(first uint32, n int) bool {
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

// drop forgets every block and gives the pages back to the kernel, keeping
// the mappings for readers that may still hold an address (they read
// zeros); the arena allocates nothing afterwards. REQUIRES: write lock.
func (a *arena) drop() {
	for ci := range a.nchunks {
		dropChunk(a.chunk(uint32(ci)))
	}
	dropChunk(a.nextMem)
	dropChunk(a.pinMem)
	a.free, a.nfree, a.fresh = noBlock, 0, 0
	a.dropped = true
}

// unmap releases every mapping. Only once no reader can run: from the
// Cache's cleanup, when it is unreachable.
func (a *arena) unmap() {
	a.mappings().unmap()
	a.chunks, a.nchunks, a.next, a.nextMem = nil, 0, nil, nil
	a.pins, a.pinMem = nil, nil
}

// mappings is what unmapping the arena takes, apart from the arena and
// its shard: the Cache's cleanup holds these. A shard leads back to the
// Cache through its config's OnEvict whenever the hook reaches the
// Cache (hybrid's is a method of the Cache that owns it), and a cleanup
// whose argument reaches its object never runs: the Cache, and all the
// hook reaches, would stay in memory for good.
type mappings struct {
	chunks     []atomic.Pointer[byte] // the arena's: chunks mapped later show up here
	chunkBytes int
	next, pins []byte
}

func (a *arena) mappings() mappings {
	return mappings{chunks: a.chunks, chunkBytes: a.chunkBytes(), next: a.nextMem, pins: a.pinMem}
}

// unmap releases the mappings. REQUIRES: as arena.unmap.
func (m mappings) unmap() {
	for i := range m.chunks {
		if p := m.chunks[i].Load(); p != nil {
			unmapChunk(unsafe.Slice(p, m.chunkBytes))
		}
	}
	unmapChunk(m.next)
	unmapChunk(m.pins)
}

// cursor reads or writes an entry's byte stream (key then value) across
// its chain of blocks. It lives on the caller's stack.
type cursor struct {
	a    *arena
	blk  uint32 // next block to load
	cur  []byte // loaded, not yet consumed bytes
	left int    // bytes of the stream not yet loaded
}

func (a *arena) cursor(first uint32, length int) cursor {
	return cursor{a: a, blk: first, left: length}
}

// take consumes and returns up to n bytes of the stream; fewer when a run
// of contiguous blocks ends, none at the end of the stream.
func (c *cursor) take(n int) []byte {
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
func (c *cursor) write(p []byte) {
	for len(p) > 0 {
		n := copy(c.take(len(p)), p)
		p = p[n:]
	}
}

// equal reports whether the next len(p) bytes of the stream equal p.
func (c *cursor) equal(p []byte) bool {
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
func (c *cursor) appendTo(dst []byte, n int) []byte {
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
func (c *cursor) skip(n int) {
	for n > 0 {
		q := c.take(n)
		if len(q) == 0 {
			return
		}
		n -= len(q)
	}
}

package accesslog

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

const (
	recordHeader = 12       // a buffered line's sequence number and length
	minChunk     = 512      // bytes of a chunk, at least
	maxChunk     = 4 << 10  // ... and at most
	maxKick      = 64 << 10 // bytes buffered that wake the writer, at most
)

// buffers holds the lines not yet written, in shards: a Write appends its
// line to the shard its connection (Entry.Conn) maps to, under that
// shard's mutex, with the next number of one sequence shared by every
// shard, taken under the same mutex. Requests on different connections
// rarely meet on a mutex (with one shared by all, its contended Unlock
// waking waiters showed in the CPU profile of 1 KiB hits as much as
// formatting the line); the sequence number keeps
// every line in the order its Write took it, across shards. The writer
// takes every shard's lines at once, holding all their mutexes, so what
// it takes is exactly the lines numbered since its last take, none
// missing, and it writes them in that order.
//
// A shard appends lines to chunks of a fixed size taken from one free
// list, a chunk at a time (the list's mutex is taken once a chunk, not
// once a line), so one busy connection may use the whole budget. The
// chunks, Options.BufferLines lines of lineBytes in all, are allocated at
// Open as one slab and come back to the free list once written: a line
// allocates nothing. When the list is empty (the writer is behind: the
// disk cannot keep up) lines are dropped and counted. A line longer than
// a chunk gets a buffer of its own, which the writer replaces by a new
// chunk. The writer is woken when a quarter of the chunks, at most
// maxKick bytes, are in use (besides its flushEvery tick), and the list
// is a stack: the chunks in use are few and the same ones, warm in the
// cache. (Taking the chunks in turn from the whole budget, 2 MiB by
// default, would make each line's bytes cold to write and to read again,
// and push the proxy's own data out of the cache.)
type buffers struct {
	_       [64]byte
	seq     atomic.Uint64 // the last sequence number taken
	_       [56]byte
	shards  []shard     // a power of two of them
	freeMu  sync.Mutex  // guards free
	free    [][]byte    // empty chunks, a stack
	chunk   int         // bytes of a chunk
	lowFree int         // so few chunks free wake the writer
	wakeup  func()      // wakes the writer; must not block
	closed  atomic.Bool // set before the writer's last take; read under a shard's mu

	// Owned by the writer goroutine.
	runs    [][][]byte // the chunks last taken, by shard, in order
	order   []lineRef  // the lines taken, by sequence number
	outBuf  []byte     // the lines taken, in order, not yet written
	lastSeq uint64     // the last sequence number taken
}

// shard is the chunks of lines of some connections, and their mutex, on
// cache lines of their own. A buffered line is its sequence number (8
// bytes), its length (4) and its bytes.
type shard struct {
	mu      sync.Mutex
	cur     []byte   // the chunk being filled; nil: none
	full    [][]byte // the chunks filled before cur
	scratch []byte   // stackLine bytes where a line is formatted when cur has less room (addEntry)
	_       [128 - 8 - 24 - 24 - 24]byte
}

// lineRef is where the writer found a line: runs[shard][chunk][off:off+n].
type lineRef struct {
	shard, chunk, off, n uint32
}

// init sizes the buffers for budget bytes and procs Ps.
func (b *buffers) init(budget, procs int) {
	ns := 4
	for ns < 4*procs { // a power of two, at least 4 × procs
		ns *= 2
	}
	b.shards, b.runs = make([]shard, ns), make([][][]byte, ns)
	scratch := make([]byte, ns*stackLine)
	for i := range b.shards {
		b.shards[i].scratch = scratch[i*stackLine : i*stackLine : (i+1)*stackLine]
	}
	b.chunk = min(max(budget/(4*ns), minChunk), maxChunk)
	n := max(budget/b.chunk, 2)
	b.lowFree = n - max(min(n/4, maxKick/b.chunk), 1)
	b.free = make([][]byte, n)
	slab := make([]byte, n*b.chunk)
	for i := range n {
		b.free[n-1-i] = slab[i*b.chunk : i*b.chunk : (i+1)*b.chunk] // the slab's start on top
	}
}

// addEntry formats e (json or combined) into conn's shard; false if no
// chunk is free or the buffers are closed. The line is formatted under
// the shard's mutex, straight into its chunk when the chunk has room for
// a line of stackLine bytes (most lines: chunks hold 4 KiB, lines about
// 100 bytes combined, 300 JSON), else into the shard's scratch buffer and
// copied. Formatting a line into a buffer of its own (a stack array,
// zeroed at every call) and copying it cost more: BenchmarkWrite -cpu 1,
// medians of 8, went from 149 to 145 ns a combined line and from 216 to
// 207 ns a JSON one (the writer's part included). Lines of connections
// that share a shard wait for each other's formatting (a few hundred ns),
// which with 4 × GOMAXPROCS shards is rare.
func (b *buffers) addEntry(conn uint64, e *Entry, json bool) bool {
	sh := &b.shards[conn&uint64(len(b.shards)-1)]
	sh.mu.Lock()
	if b.closed.Load() {
		sh.mu.Unlock()
		return false
	}
	var line []byte
	if at := len(sh.cur) + recordHeader; cap(sh.cur)-at >= stackLine {
		line = appendLine(sh.cur[at:at], e, json)
		if len(line) <= cap(sh.cur)-at { // formatted in place
			b.putHeader(sh.cur[at-recordHeader:at], len(line))
			sh.cur = sh.cur[:at+len(line)]
			sh.mu.Unlock()
			return true
		}
		// Longer than the room left: append moved it to the heap, as it
		// would have from a stack array. It goes in as any line.
	} else {
		line = appendLine(sh.scratch[:0], e, json)
	}
	return b.addLocked(sh, line)
}

func appendLine(dst []byte, e *Entry, json bool) []byte {
	if json {
		return AppendJSON(dst, e)
	}
	return AppendCombined(dst, e)
}

// putHeader writes a line's record header, with the next sequence
// number, to h. REQUIRES: the mutex of the line's shard held.
func (b *buffers) putHeader(h []byte, n int) {
	binary.LittleEndian.PutUint64(h, b.seq.Add(1))
	binary.LittleEndian.PutUint32(h[8:], uint32(n))
}

// add appends line to conn's shard; false if no chunk is free or the
// buffers are closed. closed is read under the shard's mutex, which the
// writer's last take also holds: a line is either taken by it or refused.
func (b *buffers) add(conn uint64, line []byte) bool {
	sh := &b.shards[conn&uint64(len(b.shards)-1)]
	sh.mu.Lock()
	if b.closed.Load() {
		sh.mu.Unlock()
		return false
	}
	return b.addLocked(sh, line)
}

// addLocked appends line to sh and unlocks sh.mu; false if no chunk is
// free. REQUIRES: sh.mu held, b not closed.
func (b *buffers) addLocked(sh *shard, line []byte) bool {
	if len(sh.cur)+recordHeader+len(line) > cap(sh.cur) && !b.next(sh, recordHeader+len(line)) {
		sh.mu.Unlock()
		b.wakeup()
		return false
	}
	at := len(sh.cur) + recordHeader
	sh.cur = append(sh.cur[:at], line...)
	b.putHeader(sh.cur[at-recordHeader:at], len(line))
	sh.mu.Unlock()
	return true
}

// next gives sh a chunk with room for n bytes; false if none is free.
// REQUIRES: sh.mu held.
func (b *buffers) next(sh *shard, n int) bool {
	b.freeMu.Lock()
	left := len(b.free) - 1
	if left < 0 {
		b.freeMu.Unlock()
		return false
	}
	c := b.free[left]
	b.free[left] = nil
	b.free = b.free[:left]
	b.freeMu.Unlock()
	if left <= b.lowFree {
		b.wakeup()
	}
	if n > cap(c) {
		// A line longer than a chunk gets a chunk of its own. The free
		// chunk it stands for in the budget rides along empty and goes
		// back to the free list at recycle, which drops the long one.
		sh.full = append(sh.full, c)
		c = make([]byte, 0, n)
	}
	if len(sh.cur) > 0 {
		sh.full = append(sh.full, sh.cur)
	}
	sh.cur = c
	return true
}

// take moves every shard's chunks to b.runs, holding all the shards'
// mutexes at once: no add takes a sequence number meanwhile, so the lines
// taken are those of every number since the last take. It returns how
// many there are.
func (b *buffers) take() int {
	for i := range b.shards {
		b.shards[i].mu.Lock()
	}
	n := int(b.seq.Load() - b.lastSeq)
	for i := range b.shards {
		sh := &b.shards[i]
		run := sh.full
		if len(sh.cur) > 0 {
			run, sh.cur = append(run, sh.cur), nil
		}
		sh.full, b.runs[i] = b.runs[i][:0], run
	}
	for i := range b.shards {
		b.shards[i].mu.Unlock()
	}
	return n
}

// merge appends the n lines taken to outBuf, in the order of their
// sequence numbers.
func (b *buffers) merge(n int) []byte {
	if cap(b.order) < n {
		b.order = make([]lineRef, n)
	}
	b.order = b.order[:n]
	size := 0
	for s, run := range b.runs {
		for c, ch := range run {
			for off := 0; off < len(ch); {
				seq := binary.LittleEndian.Uint64(ch[off:])
				ln := int(binary.LittleEndian.Uint32(ch[off+8:]))
				off += recordHeader
				b.order[seq-b.lastSeq-1] = lineRef{uint32(s), uint32(c), uint32(off), uint32(ln)}
				off += ln
				size += ln
			}
		}
	}
	b.lastSeq += uint64(n)
	out := b.outBuf
	if cap(out)-len(out) < size {
		out = append(make([]byte, 0, 2*(len(out)+size)), out...)
	}
	for _, r := range b.order {
		out = append(out, b.runs[r.shard][r.chunk][r.off:r.off+r.n]...)
	}
	b.outBuf = out
	return out
}

// recycle gives the chunks taken back to the free list.
func (b *buffers) recycle() {
	b.freeMu.Lock()
	defer b.freeMu.Unlock()
	for i, run := range b.runs {
		for j, c := range run {
			if cap(c) == b.chunk { // not a long line's own (next)
				b.free = append(b.free, c[:0])
			}
			run[j] = nil
		}
		b.runs[i] = run[:0]
	}
}

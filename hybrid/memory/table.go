package memory

import (
	"math/bits"
	"sync/atomic"
)

// table is a memory-tier shard's index: key hash → entryRef. It replaced a
// Go map so that hits can read it without the shard lock: a Go map
// read racing a write is a fatal error, this table's is not.
//
// Layout. One pointer-free []uint64 of (hash, ref) pairs, open addressing
// with linear probing and backward-shift deletion, so there are no
// tombstones and a probe ends at the first empty pair. Hash 0 marks an empty
// pair (Cache.hash never returns 0). A hash's home is fastrange of its low
// 32 bits rotated up (the top bits chose the shard, so they are all alike
// here), which works for any size: the table grows by 1.5× past 3/4 load,
// keeping the load in [1/2, 3/4] and probes short. It holds live entries
// and S3-FIFO ghosts, up to twice the shard's entries, at 16 bytes / load
// (21–32 bytes) per key, less than the Swiss map it replaced.
//
// Concurrency. One writer at a time (the shard's write lock) and any number
// of lock-free readers. Every word is read and written with sync/atomic,
// and a grown table is published through shard.tab, so a reader never
// faults or loops (probes are bounded by the table size); but a reader that
// overlaps a writer may see a torn view: a pair half moved by a deletion, a
// table already replaced. It must therefore validate what it found against
// the shard's sequence counter before trusting it (shard.optimisticGet).
//
// The one word a reader writes is a ref's hit count (entryRef.freq, a CAS).
// A CAS that races the writer is harmless: it fails, or bumps a count the
// writer then overwrites or discards; at worst a hit goes uncounted. It can
// never touch entry bytes, which is why the count lives here and not in the
// arena, whose blocks a writer may have reused meanwhile.
type table struct {
	words []uint64 // 2*n: words[2i] hash (0 = empty), words[2i+1] ref
	n     uint64   // slots
	used  int      // occupied pairs; the writer's alone
}

const tableMinSlots = 8

func newMemTable(slots uint64) *table {
	slots = max(slots, tableMinSlots)
	return &table{words: make([]uint64, 2*slots), n: slots}
}

// home returns the slot a probe for h starts at.
func (t *table) home(h uint64) uint64 {
	hi, _ := bits.Mul64(bits.RotateLeft64(h, 32), t.n)
	return hi
}

// step returns the slot after i.
func (t *table) step(i uint64) uint64 {
	if i++; i == t.n {
		return 0
	}
	return i
}

// find returns the position and ref of hash h. Safe without the lock (see
// table); the writer calls it too.
func (t *table) find(h uint64) (pos uint64, ref entryRef, ok bool) {
	for i, k := t.home(h), uint64(0); k < t.n; i, k = t.step(i), k+1 {
		switch atomic.LoadUint64(&t.words[2*i]) {
		case h:
			return i, entryRef(atomic.LoadUint64(&t.words[2*i+1])), true
		case 0:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// ref returns the ref at pos (the writer re-reads a count this way).
func (t *table) ref(pos uint64) entryRef {
	return entryRef(atomic.LoadUint64(&t.words[2*pos+1]))
}

// setRef replaces the ref at pos. REQUIRES: the writer.
func (t *table) setRef(pos uint64, r entryRef) {
	atomic.StoreUint64(&t.words[2*pos+1], uint64(r))
}

// casRef replaces the ref at pos if it still is old (a reader's hit count).
func (t *table) casRef(pos uint64, old, r entryRef) {
	atomic.CompareAndSwapUint64(&t.words[2*pos+1], uint64(old), uint64(r))
}

// full reports whether one more pair would pass 3/4 load.
func (t *table) full() bool {
	return uint64(t.used+1)*4 > t.n*3
}

// put sets h → r, adding the pair if h is absent. REQUIRES: the writer, and
// !full() when h may be absent.
func (t *table) put(h uint64, r entryRef) {
	for i := t.home(h); ; i = t.step(i) {
		switch atomic.LoadUint64(&t.words[2*i]) {
		case h:
			t.setRef(i, r)
			return
		case 0:
			// Ref before hash: a reader that sees the hash sees its ref.
			t.setRef(i, r)
			atomic.StoreUint64(&t.words[2*i], h)
			t.used++
			return
		}
	}
}

// del removes the pair at pos, shifting later pairs of its probe run back
// so that no probe meets a hole before its key. REQUIRES: the writer.
func (t *table) del(pos uint64) {
	hole := pos
	for j := t.step(pos); ; j = t.step(j) {
		h := atomic.LoadUint64(&t.words[2*j])
		if h == 0 {
			break
		}
		// The pair at j may fill the hole only if its home is not in the
		// cyclic interval (hole, j]: else a probe from home would pass j
		// before reaching the hole.
		if t.dist(t.home(h), j) >= t.dist(hole, j) {
			t.setRef(hole, t.ref(j))
			atomic.StoreUint64(&t.words[2*hole], h)
			hole = j
		}
	}
	atomic.StoreUint64(&t.words[2*hole], 0)
	atomic.StoreUint64(&t.words[2*hole+1], 0)
	t.used--
}

// dist returns how many steps lead from slot a forward to slot b.
func (t *table) dist(a, b uint64) uint64 {
	if b >= a {
		return b - a
	}
	return b + t.n - a
}

// grown returns a table of 1.5× the slots holding the same pairs.
// REQUIRES: the writer; the caller publishes the result.
func (t *table) grown() *table {
	g := newMemTable(t.n + t.n/2)
	for i := range t.n {
		if h := atomic.LoadUint64(&t.words[2*i]); h != 0 {
			g.put(h, t.ref(i))
		}
	}
	return g
}

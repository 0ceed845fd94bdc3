package memory

import (
	"fmt"
	"testing"
	"time"
)

// TestTakeRun: an entry of n blocks is stored as one run when a run of n
// free blocks is among the free list's first runs, even behind shorter
// ones (a chunk's leftover tail, a smaller victim's chain); the list
// stays whole around the run taken.
func TestTakeRun(t *testing.T) {
	var a arena
	a.init(64, 64<<10) // 64 KiB chunks of 1,024 blocks
	t.Cleanup(func() { a.drop() })
	chain := func(n int) (uint32, uint32) {
		f, l, ok := a.alloc(n)
		if !ok || !a.contiguous(f, n) {
			t.Fatalf("alloc(%d): ok %v, not one run", n, ok)
		}
		return f, l
	}
	long1, long2 := chain(8)
	chain(1) // keeps the two chains apart
	short1, short2 := chain(3)
	// Free list: short (3) then long (8): the first 8 free blocks as they
	// stand are not one run.
	a.release(long1, long2, 8)
	a.release(short1, short2, 3)
	first, last, ok := a.alloc(6)
	if !ok || first != long1 || last != long1+5 || !a.contiguous(first, 6) {
		t.Fatalf("alloc(6) = %d..%d (ok %v), want the long chain's first six blocks %d..%d", first, last, ok, long1, long1+5)
	}
	var got []uint32
	for b := a.free; b != noBlock; b = a.next[b] {
		got = append(got, b)
	}
	want := []uint32{short1, short1 + 1, short2, long1 + 6, long2}
	if a.nfree != len(want) || len(got) != len(want) {
		t.Fatalf("free list %v (nfree %d), want %v", got, a.nfree, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("free list %v, want %v", got, want)
		}
	}
}

// TestArenaWithinCapacity: however entries of mixed large sizes churn,
// the chunks a shard's arena maps (resident at once: MAP_POPULATE) stay
// within the shard's share of Capacity, which is the memory tier's term in
// the process's memory budget (configs.Budget.Tier; the Go heap limit is
// what is left of the budget beside it).
func TestArenaWithinCapacity(t *testing.T) {
	const capacity = 16 << 20
	m := newTestCache(t, Options{Capacity: capacity, Shards: 4}, ^uint64(0))
	val := make([]byte, 320<<10)
	for i := range 2000 {
		size := (64 + 64*(i%5)) << 10 // 64–320 KiB, as TestInsertCopies
		m.Set([]byte(fmt.Sprintf("k%d", i)), val[:size], time.Time{})
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		mapped := int64(s.arena.nchunks) << (s.arena.bsShift + s.arena.chunkShift)
		s.mu.Unlock()
		if share := int64(capacity / len(m.shards)); mapped > share {
			t.Errorf("shard %d: arena mapped %d KiB, over its %d KiB share of Capacity", i, mapped>>10, share>>10)
		}
	}
}

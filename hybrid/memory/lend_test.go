package memory

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pinned returns how many pin words are nonzero: after every Value is
// released, none may be (a leaked pin keeps its blocks forever).
func (m *Cache) pinned() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for b := range s.arena.fresh {
			if s.arena.pins[b].Load() != 0 {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// heldValues keeps the last few Values a model worker lent, each with a
// copy of its bytes taken at Lend: when released, a lent value must still
// read as it did, whatever was set, evicted or deleted meanwhile.
type heldValues struct {
	vals [4]*Value
	want [4][]byte
	now  []byte
	next int
}

func newHeldValues() *heldValues {
	h := &heldValues{}
	for i := range h.vals {
		h.vals[i] = new(Value)
	}
	return h
}

// lend releases the oldest held value (checking it first) and lends key
// into it, checking the value as Get's would be checked.
func (h *heldValues) lend(m *Cache, key []byte, shared bool, model map[string]uint64) error {
	i := h.next
	h.next = (h.next + 1) % len(h.vals)
	if err := h.release(i); err != nil {
		return err
	}
	v := h.vals[i]
	if _, ok := m.Lend(key, v); !ok {
		return nil
	}
	h.want[i] = appendPieces(h.want[i][:0], v)
	ver, err := modelCheck(key, h.want[i])
	if err != nil {
		return err
	}
	if want, owned := model[string(key)]; !shared && (!owned || ver != want) {
		return fmt.Errorf("%s: lent version %d, model %d (%v)", key, ver, want, owned)
	}
	return nil
}

// release checks the held value's pieces (the borrowed bytes themselves,
// not a copy) against what they were at Lend, and every other time its
// joined Bytes too, then releases it.
func (h *heldValues) release(i int) error {
	v := h.vals[i]
	if v.Len() > 0 {
		h.now = appendPieces(h.now[:0], v)
		if !bytes.Equal(h.now, h.want[i]) {
			return fmt.Errorf("a held value changed under its pin (lent %v, %d pieces): %.40q, was %.40q",
				v.Lent(), len(v.Spans()), h.now, h.want[i])
		}
		if i%2 == 0 && !bytes.Equal(v.Bytes(), h.want[i]) {
			return fmt.Errorf("a held value's Bytes (%d pieces) differ from its pieces: %.40q, was %.40q",
				len(v.Spans()), v.Bytes(), h.want[i])
		}
	}
	v.Release()
	return nil
}

// appendPieces appends v's pieces to dst, checking that they add up to
// v.Len, without joining them in v (Bytes).
func appendPieces(dst []byte, v *Value) []byte {
	n := len(dst)
	for _, p := range v.Spans() {
		dst = append(dst, p...)
	}
	if len(dst)-n != v.Len() {
		panic(fmt.Sprintf("memory: %d pieces of %d bytes for a value of %d", len(v.Spans()), len(dst)-n, v.Len()))
	}
	return dst
}

func (h *heldValues) releaseAll() {
	for i := range h.vals {
		h.vals[i].Release()
	}
}

func TestLend(t *testing.T) {
	m := newTestCache(t, Options{Capacity: 4 << 20, Shards: 1}, ^uint64(0))
	small := bytes.Repeat([]byte("s"), LendMin-1)
	large := bytes.Repeat([]byte("L"), LendMin)
	m.Set([]byte("small"), small, time.Time{})
	m.Set([]byte("large"), large, time.Time{})
	m.Set([]byte("gone"), large, time.Now().Add(-time.Second).Add(time.Hour))
	m.cfg.now = func() int64 { return time.Now().Add(2 * time.Hour).UnixNano() } // "gone" expired
	for _, tc := range []struct {
		key        string
		hit, lent  bool
		want       []byte
		copiedMore uint64
	}{
		{"small", true, false, small, uint64(len(small))},
		{"large", true, true, large, 0},
		{"absent", false, false, nil, 0},
		{"gone", false, false, nil, 0},
	} {
		t.Run(tc.key, func(t *testing.T) {
			var v Value
			before := m.Stats().Copied
			_, ok := m.Lend([]byte(tc.key), &v)
			defer v.Release()
			if b := m.Stats().Borrowed; b != map[bool]int64{true: 1}[tc.lent] {
				t.Fatalf("Stats.Borrowed %d while lent %v", b, tc.lent)
			}
			if ok != tc.hit || v.Lent() != tc.lent || !bytes.Equal(v.Bytes(), tc.want) {
				t.Fatalf("Lend = %v, lent %v, %d bytes; want %v, %v, %d", ok, v.Lent(), len(v.Bytes()), tc.hit, tc.lent, len(tc.want))
			}
			if got := m.Stats().Copied - before; got != tc.copiedMore {
				t.Fatalf("Stats.Copied grew by %d, want %d", got, tc.copiedMore)
			}
		})
	}
	if n := m.pinned(); n != 0 {
		t.Fatalf("%d pins left", n)
	}
}

// removal is a way a lent entry leaves the cache.
type removal struct {
	name   string
	policy Policy // FIFO for evict: S3-FIFO keeps a hit entry over one-hit fills
	remove func(m *Cache)
}

// removals returns the ways a writer removes key, a value of size bytes:
// overwrite, delete, and evict (by the Sets that follow).
func removals(key []byte, size int) []removal {
	return []removal{
		{"overwrite", S3FIFO, func(m *Cache) { m.Set(key, bytes.Repeat([]byte("n"), size), time.Time{}) }},
		{"delete", S3FIFO, func(m *Cache) { m.Delete(key) }},
		{"evict", FIFO, func(m *Cache) {}},
	}
}

// TestLendOutlivesEntry lends a large value, removes its entry in each
// way a writer can, and then writes enough to reuse every free block: the
// lent bytes must not change, must stay charged (Stats.Lent) until
// Release, and be freed and uncharged by it.
func TestLendOutlivesEntry(t *testing.T) {
	const size = 64 << 10
	key := []byte("lent")
	for _, tc := range append(removals(key, size), []removal{
		{"expire", S3FIFO, func(m *Cache) {
			m.cfg.now = func() int64 { return time.Now().Add(time.Hour).UnixNano() }
			var v Value
			m.Lend(key, &v) // finds it expired and drops it
		}},
		{"close", S3FIFO, func(m *Cache) { _ = m.Close() }},
	}...) {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestCache(t, Options{Capacity: 1 << 20, Shards: 1, Policy: tc.policy}, ^uint64(0))
			old := bytes.Repeat([]byte("o"), size)
			m.Set(key, old, time.Now().Add(time.Minute))
			var v Value
			if _, ok := m.Lend(key, &v); !ok || !v.Lent() {
				t.Fatalf("Lend: hit %v lent %v", ok, v.Lent())
			}
			tc.remove(m)
			for i := range 64 { // 4 MiB through a 1 MiB tier
				m.Set(fmt.Appendf(nil, "fill%d", i), bytes.Repeat([]byte{byte(i)}, size), time.Time{})
			}
			st := m.Stats()
			if tc.name != "close" {
				if !bytes.Equal(v.Bytes(), old) {
					t.Fatalf("lent bytes changed: %.20q…", v.Bytes())
				}
				if st.Lent < size || st.Bytes > st.Capacity {
					t.Fatalf("while lent: %+v; want Lent ≥ %d, Bytes ≤ Capacity", st, size)
				}
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
			v.Release()
			if st := m.Stats(); st.Lent != 0 {
				t.Fatalf("after Release: Lent %d", st.Lent)
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
			if n := m.pinned(); n != 0 && tc.name != "close" {
				t.Fatalf("%d pins left", n)
			}
			v.Release() // idempotent
		})
	}
}

// splitEntry sets key to a value of size bytes that the arena stores in
// pieces: freed runs of blocks are spread out, and the arena takes free
// blocks as they come (scatter). REQUIRES: m has one shard, nothing set.
func splitEntry(t *testing.T, m *Cache, key []byte, size int) []byte {
	t.Helper()
	m.shards[0].arena.scatter = true
	for i := range 32 {
		m.Set(fmt.Appendf(nil, "frag%d", i), make([]byte, size/8), time.Time{})
	}
	for i := 0; i < 32; i += 2 {
		m.Delete(fmt.Appendf(nil, "frag%d", i))
	}
	val := make([]byte, size)
	for i := range val {
		val[i] = byte(i*7 + i>>8)
	}
	if !m.Set(key, val, time.Now().Add(time.Minute)) {
		t.Fatal("Set refused the value")
	}
	return val
}

// TestLendSplit lends values stored in pieces (several runs of blocks):
// Spans are the stored bytes, in order, without a copy; Bytes joins them
// once, counted in Stats.Copied; and the pin keeps the pieces unchanged
// through an overwrite, a delete or an eviction and the writes that reuse
// every free block, until Release frees and uncharges them.
func TestLendSplit(t *testing.T) {
	const size = 64 << 10
	key := []byte("split")
	for _, tc := range removals(key, size) {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestCache(t, Options{Capacity: 1 << 20, Shards: 1, Policy: tc.policy}, ^uint64(0))
			val := splitEntry(t, m, key, size)
			before := m.Stats().Copied
			var v Value
			if _, ok := m.Lend(key, &v); !ok || !v.Lent() || len(v.Spans()) < 2 {
				t.Fatalf("Lend: hit %v, lent %v, %d pieces; want a value lent in pieces", ok, v.Lent(), len(v.Spans()))
			}
			if got := appendPieces(nil, &v); !bytes.Equal(got, val) || v.Len() != size {
				t.Fatalf("pieces hold %d bytes (Len %d), not the value", len(got), v.Len())
			}
			if cap(v.buf) != 0 || m.Stats().Copied != before {
				t.Fatalf("Lend copied: buffer %d bytes, Stats.Copied +%d", cap(v.buf), m.Stats().Copied-before)
			}
			tc.remove(m)
			for i := range 64 { // 4 MiB through a 1 MiB tier
				m.Set(fmt.Appendf(nil, "fill%d", i), bytes.Repeat([]byte{byte(i)}, size), time.Time{})
			}
			var now Value
			if _, ok := m.Lend(key, &now); ok && tc.name != "overwrite" {
				t.Fatal("the entry is still in the cache")
			}
			now.Release()
			if got := appendPieces(nil, &v); !bytes.Equal(got, val) {
				t.Fatal("lent pieces changed under their pin")
			}
			if st := m.Stats(); st.Lent < size || st.Bytes > st.Capacity {
				t.Fatalf("while lent: %+v; want Lent ≥ %d, Bytes ≤ Capacity", st, size)
			}
			for range 2 { // joined once
				if !bytes.Equal(v.Bytes(), val) {
					t.Fatal("Bytes differs from the value")
				}
				if got := m.Stats().Copied - before; got != size {
					t.Fatalf("Stats.Copied +%d after Bytes, want +%d (one join)", got, size)
				}
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
			v.Release()
			if st := m.Stats(); st.Lent != 0 || st.Borrowed != 0 {
				t.Fatalf("after Release: %+v", st)
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
			if n := m.pinned(); n != 0 {
				t.Fatalf("%d pins left", n)
			}
		})
	}
}

// TestPinProtocol drives the pin word of one block through the orders in
// which borrowers (real or transient) and a writer can meet, and checks
// that the blocks are reclaimed exactly once, by the last to let go.
func TestPinProtocol(t *testing.T) {
	type step byte
	const (
		pin     step = 'p' // a borrower pins
		unpin   step = 'u' // a borrower unpins; the result says whether it reclaims
		retireF step = 'f' // the writer retires the entry and frees it now
		retireZ step = 'z' // the writer retires the entry and makes it a zombie
	)
	for _, tc := range []struct {
		name    string
		steps   []step
		reclaim []bool // per unpin: must it reclaim?
	}{
		{"unlent", []step{retireF}, nil},
		{"released before retire", []step{pin, unpin, retireF}, []bool{false}},
		{"retired while lent", []step{pin, retireZ, unpin}, []bool{true}},
		{"two borrowers", []step{pin, pin, retireZ, unpin, unpin}, []bool{false, true}},
		{"transient pin after retire", []step{pin, retireZ, pin, unpin, unpin}, []bool{false, true}},
		{"transient pin on a freed block", []step{retireF, pin, unpin}, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a arena
			a.init(64, 64<<10)
			var got []bool
			for _, s := range tc.steps {
				switch s {
				case pin:
					a.pin(3)
				case unpin:
					got = append(got, a.unpin(3))
				case retireF, retireZ:
					if z := a.retire(3); z != (s == retireZ) {
						t.Fatalf("retire = %v, want %v", z, s == retireZ)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.reclaim) {
				t.Fatalf("unpins reclaim %v, want %v", got, tc.reclaim)
			}
			if w := a.pins[3].Load(); w != 0 {
				t.Fatalf("pin word %#x left", w)
			}
			a.unmap()
		})
	}
}

// TestLendHotKeyRace has 64 goroutines lend one hot key (and a few
// others) while writers overwrite, delete and evict them; each borrower
// holds its value across a yield and checks its pieces (the borrowed
// bytes, not a joined copy) are intact before release. The churn of
// mixed sizes leaves the free list in short runs, so many values are lent
// in pieces (about half of the lends). At the end nothing may stay
// pinned or charged as lent. Run with -race.
func TestLendHotKeyRace(t *testing.T) {
	m := newTestCache(t, Options{Capacity: 2 << 20, Shards: 2, BlockSize: 256}, ^uint64(0))
	m.cfg.lendMin = 1024
	var lends, split atomic.Int64
	keys := [][]byte{[]byte("hot"), []byte("warm1"), []byte("warm2")}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 128)
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v Value
			defer v.Release()
			var want, now []byte
			for i := 0; !stop.Load(); i++ {
				k := keys[0]
				if i%4 == 3 {
					k = keys[1+(w+i)%2]
				}
				if _, ok := m.Lend(k, &v); !ok {
					continue
				}
				want = appendPieces(want[:0], &v)
				if _, err := modelCheck(k, want); err != nil {
					errs <- err
					return
				}
				if lends.Add(1); len(v.Spans()) > 1 {
					split.Add(1)
				}
				runtime.Gosched() // let writers run while it is held
				if now = appendPieces(now[:0], &v); !bytes.Equal(now, want) {
					errs <- fmt.Errorf("%s changed under its pin (%d pieces)", k, len(v.Spans()))
					return
				}
				v.Release()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer stop.Store(true)
		for i := 0; i < 20000 && len(errs) == 0; i++ {
			k := keys[i%len(keys)]
			switch i % 5 {
			case 4:
				m.Delete(k)
			default:
				m.Set(k, modelValue(k, uint64(i), 512+i%(32<<10)), time.Time{})
			}
			// Churn that evicts the borrowed entries.
			m.Set(fmt.Appendf(nil, "fill%d", i%200), bytes.Repeat([]byte{1}, 24<<10), time.Time{})
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Lent != 0 || st.Borrowed != 0 || st.Hits == 0 {
		t.Fatalf("after all releases: %+v", st)
	}
	if n := m.pinned(); n != 0 {
		t.Fatalf("%d pins left", n)
	}
	if t.Logf("%d of %d lends in pieces", split.Load(), lends.Load()); split.Load() == 0 {
		t.Fatal("no value was lent in pieces")
	}
}

func TestLendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are off under -race")
	}
	m := newTestCache(t, Options{Capacity: 4 << 20}, ^uint64(0))
	m.Set([]byte("small"), make([]byte, 100), time.Time{})
	m.Set([]byte("large"), make([]byte, 256<<10), time.Time{})
	split := newTestCache(t, Options{Capacity: 4 << 20, Shards: 1}, ^uint64(0))
	splitEntry(t, split, []byte("split"), 256<<10)
	var v Value
	for _, tc := range []struct {
		m   *Cache
		key string
	}{{m, "small"}, {m, "large"}, {split, "split"}} {
		key := []byte(tc.key)
		tc.m.Lend(key, &v) // grows v's buffers once
		if tc.key == "split" && len(v.Spans()) <= inSpans {
			t.Fatalf("split: %d pieces, want more than the %d a Value holds in place", len(v.Spans()), inSpans)
		}
		if n := testing.AllocsPerRun(100, func() {
			tc.m.Lend(key, &v)
			_ = v.Spans()
			v.Release()
		}); n != 0 {
			t.Fatalf("%s: %v allocs per Lend", tc.key, n)
		}
		if tc.key == "split" && len(v.Spans()) != 0 {
			t.Fatal("Spans after Release")
		}
	}
}

// BenchmarkLend compares Get (copy) and Lend+Release on one hot key read
// by 64 goroutines, by value size: the crossover sets LendMin.
func BenchmarkLend(b *testing.B) {
	for _, size := range []int{1 << 10, 4 << 10, 8 << 10, 16 << 10, 64 << 10, 256 << 10} {
		m, err := New(Options{Capacity: 64 << 20})
		if err != nil {
			b.Fatal(err)
		}
		m.cfg.lendMin = 0
		key := []byte("hot")
		m.Set(key, make([]byte, size), time.Time{})
		b.Run(fmt.Sprintf("get/%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.SetParallelism(32) // 64 goroutines on 2 Ps
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]byte, 0, size)
				for pb.Next() {
					m.Get(key, dst)
				}
			})
		})
		b.Run(fmt.Sprintf("lend/%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				var v Value
				for pb.Next() {
					m.Lend(key, &v)
					v.Release()
				}
			})
		})
		_ = m.Close()
	}
}

// BenchmarkPinHot compares the two ways a borrower can announce itself on
// one hot entry read by 64 goroutines on 2 Ps: a reference count in the
// entry's pin word (what Lend does: every borrower writes one shared word)
// and an epoch-style striped count (each goroutine writes its own stripe's
// cache line, but a writer can then only tell that some borrower is out,
// not of which entry, and must defer every free until all stripes drain).
func BenchmarkPinHot(b *testing.B) {
	b.Run("refcount", func(b *testing.B) {
		var w atomic.Uint32
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				w.Add(1)
				w.Add(^uint32(0))
			}
		})
	})
	m := newTestCache(b, Options{Capacity: 1 << 20}, ^uint64(0))
	b.Run("striped", func(b *testing.B) {
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c := m.stripe()
				c.lent.Add(1)
				c.lent.Add(-1)
			}
		})
	})
}

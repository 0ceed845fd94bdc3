package memory

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGetSetDelete(t *testing.T) {
	for _, p := range []Policy{S3FIFO, LRU, FIFO} {
		t.Run(string(p), func(t *testing.T) {
			m := newTestCache(t, Options{Policy: p, Capacity: 1 << 20, Shards: 4, BlockSize: 64}, ^uint64(0))
			big := bytes.Repeat([]byte("0123456789"), 1000) // spans many blocks
			for _, tc := range []struct{ key, value []byte }{
				{[]byte("a"), []byte("1")},
				{[]byte(""), []byte("empty key")},
				{[]byte("empty value"), []byte{}},
				{bytes.Repeat([]byte("k"), 300), big},
			} {
				if !m.Set(tc.key, tc.value, time.Time{}) {
					t.Fatalf("Set(%.10q) refused", tc.key)
				}
				dst := []byte("prefix")
				got, exp, ok := m.Get(tc.key, dst)
				if !ok || exp != 0 || string(got) != "prefix"+string(tc.value) {
					t.Fatalf("Get(%.10q) = %.20q, %d, %v", tc.key, got, exp, ok)
				}
			}
			if !m.Set([]byte("a"), []byte("2"), time.Time{}) {
				t.Fatal("overwrite refused")
			}
			if got, _, _ := m.Get([]byte("a"), nil); string(got) != "2" {
				t.Fatalf("after overwrite Get = %q", got)
			}
			if !m.Delete([]byte("a")) || m.Delete([]byte("a")) {
				t.Fatal("Delete: want true then false")
			}
			if _, _, ok := m.Get([]byte("a"), nil); ok {
				t.Fatal("hit after Delete")
			}
			if m.Len() != 3 {
				t.Fatalf("Len %d, want 3", m.Len())
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
			st := m.Stats()
			if st.Hits != 5 || st.Misses != 1 || st.Sets != 5 || st.Entries != 3 || st.Bytes != m.Bytes() {
				t.Fatalf("stats %+v", st)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, _, ok := m.Get([]byte(""), nil); ok || m.Set([]byte("b"), nil, time.Time{}) || m.Delete([]byte("")) {
				t.Fatal("Cache works after Close")
			}
		})
	}
}

func TestRefusesOversize(t *testing.T) {
	m := newTestCache(t, Options{Capacity: 64 << 10, Shards: 1, BlockSize: 64}, ^uint64(0))
	if !m.Set([]byte("k"), []byte("old"), time.Time{}) {
		t.Fatal("refused small")
	}
	if m.Set([]byte("k"), make([]byte, 16<<10), time.Time{}) {
		t.Fatal("accepted an entry over a quarter of the shard")
	}
	if _, _, ok := m.Get([]byte("k"), nil); ok {
		t.Fatal("refused Set left the old value")
	}
	if !m.Set([]byte("k"), make([]byte, 15000), time.Time{}) {
		t.Fatal("refused an entry under a quarter of the shard")
	}
	if st := m.Stats(); st.Refused != 1 || st.Sets != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCapacity sets random sizes under every policy and checks
// after every operation that Bytes ≤ Capacity and the books balance.
func TestCapacity(t *testing.T) {
	for _, p := range []Policy{S3FIFO, LRU, FIFO} {
		t.Run(string(p), func(t *testing.T) {
			evicted := 0
			m := newTestCache(t, Options{Policy: p, Capacity: 64 << 10, Shards: 4, BlockSize: 64,
				OnEvict: func(Evicted) { evicted++ }}, ^uint64(0))
			r := rand.New(rand.NewPCG(1, 2))
			for i := range 3000 {
				key := fmt.Appendf(nil, "key%d", r.IntN(300))
				switch r.IntN(4) {
				case 0:
					m.Delete(key)
				case 1:
					m.Get(key, nil)
				default:
					m.Set(key, make([]byte, r.IntN(3000)), time.Time{})
				}
				if err := m.check(); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			}
			if evicted == 0 || uint64(evicted) != m.Stats().Evictions {
				t.Fatalf("evicted %d, stats %+v", evicted, m.Stats())
			}
		})
	}
}

// TestOnEvict checks that OnEvict gets exactly the key, value and
// expiry that were set, including for chains that are not contiguous (the
// arena is fragmented first by deleting every other entry) and for keys
// that span blocks (every third key is longer than a block); that
// CopyValue copies a prefix into a short dst and restarts on each call; and
// that EvictCopies counts the copies.
func TestOnEvict(t *testing.T) {
	clock := &testClock{t: 1000}
	got := map[string]string{}
	exps := map[string]int64{}
	var copies uint64
	var split, longSplit int // evicted entries not contiguous; of those, with a key over a block
	m := newTestCache(t, Options{Policy: FIFO, Capacity: 32 << 10, Shards: 1, BlockSize: 64,
		Now: clock.now, OnEvict: func(ev Evicted) {
			if ev.value == nil {
				split++
				if len(ev.Key) > 64 {
					longSplit++
				}
			}
			v := ev.AppendValue([]byte("prefix"))[len("prefix"):]
			half := make([]byte, ev.ValueLen/2)
			if n := ev.CopyValue(half); n != len(half) || string(half) != string(v[:n]) {
				t.Errorf("CopyValue into %d bytes: %d, %q", len(half), n, half)
			}
			again := make([]byte, ev.ValueLen+10)
			if n := ev.CopyValue(again); n != ev.ValueLen || string(again[:n]) != string(v) {
				t.Errorf("second CopyValue: %d bytes, %q, want %q", n, again[:n], v)
			}
			copies += 3
			got[string(ev.Key)] = string(v)
			exps[string(ev.Key)] = ev.Expiry
		}}, ^uint64(0))
	m.shards[0].arena.scatter = true // entries in pieces too
	key := func(i int) string {
		if i%3 == 0 {
			return fmt.Sprintf("key-%d-%s", i, bytes.Repeat([]byte("k"), 90))
		}
		return fmt.Sprintf("key-%d", i)
	}
	want := map[string]string{}
	value := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "<%d>", i), 10+i%50) }
	for i := range 40 {
		m.Set([]byte(key(i)), value(i), clock.at(time.Duration(i+1)*time.Hour))
		if i%2 == 1 {
			m.Delete([]byte(key(i)))
		}
	}
	for i := 40; i < 400; i++ {
		want[key(i)] = string(value(i))
		m.Set([]byte(key(i)), value(i), clock.at(time.Duration(i+1)*time.Hour))
	}
	for i := 0; i < 40; i += 2 {
		want[key(i)] = string(value(i))
	}
	if len(got) == 0 || split == 0 || longSplit == 0 {
		t.Fatalf("evicted %d, %d not contiguous, %d of them with a long key", len(got), split, longSplit)
	}
	for k, v := range got {
		if want[k] != v {
			t.Fatalf("OnEvict(%s) value %q, want %q", k, v, want[k])
		}
		var i int
		fmt.Sscanf(k, "key-%d", &i)
		if exps[k] != clock.at(time.Duration(i+1)*time.Hour).UnixNano() {
			t.Fatalf("OnEvict(%s) expiry %d", k, exps[k])
		}
	}
	for i := 1; i < 40; i += 2 {
		if _, ok := got[key(i)]; ok {
			t.Fatalf("OnEvict called for deleted %s", key(i))
		}
	}
	if st := m.Stats(); st.EvictCopies != copies || st.Evictions != uint64(len(got)) {
		t.Fatalf("stats %+v, want %d copies of %d evictions", st, copies, len(got))
	}
}

// TestOnEvictLazy: a hook that looks only at the key and size, as the
// hybrid Cache's does when admission refuses, copies nothing; an empty entry's
// value copies as empty; the zero Evicted copies nothing.
func TestOnEvictLazy(t *testing.T) {
	for _, p := range []Policy{S3FIFO, LRU, FIFO} {
		t.Run(string(p), func(t *testing.T) {
			var seen, bytesSeen int
			m := newTestCache(t, Options{Policy: p, Capacity: 64 << 10, Shards: 1, BlockSize: 64,
				OnEvict: func(ev Evicted) { seen++; bytesSeen += len(ev.Key) + ev.ValueLen }}, ^uint64(0))
			for i := range 500 {
				m.Set(fmt.Appendf(nil, "k%d", i), make([]byte, 100+i%700), time.Time{})
			}
			if st := m.Stats(); seen == 0 || st.Evictions != uint64(seen) || st.EvictCopies != 0 || bytesSeen == 0 {
				t.Fatalf("seen %d (%d bytes), stats %+v: want evictions and no copies", seen, bytesSeen, st)
			}
		})
	}
	var empty []int
	m := newMemory16(t, FIFO, func(ev Evicted) {
		empty = append(empty, len(ev.Key), ev.ValueLen, len(ev.AppendValue(nil)))
	})
	m.Set(nil, nil, time.Time{})
	for i := range 20 {
		m.Set(fmt.Appendf(nil, "f%d", i), make([]byte, 100), time.Time{})
	}
	if len(empty) < 3 || empty[0] != 0 || empty[1] != 0 || empty[2] != 0 {
		t.Fatalf("empty entry evicted as %v", empty)
	}
	if n := (Evicted{}).CopyValue(make([]byte, 8)); n != 0 {
		t.Fatalf("zero Evicted copied %d bytes", n)
	}
}

func TestExpiry(t *testing.T) {
	clock := &testClock{t: 1_000_000}
	var evicted []string
	m := newTestCache(t, Options{Policy: FIFO, Capacity: 16 << 10, Shards: 1, BlockSize: 64,
		Now: clock.now, OnEvict: func(ev Evicted) { evicted = append(evicted, string(ev.Key)) }}, ^uint64(0))
	if m.Set([]byte("past"), []byte("v"), clock.at(-1)) || m.Set([]byte("now"), []byte("v"), clock.at(0)) {
		t.Fatal("Set accepted an expired entry")
	}
	m.Set([]byte("soon"), []byte("v"), clock.at(time.Second))
	m.Set([]byte("later"), []byte("v"), clock.at(time.Hour))
	m.Set([]byte("never"), []byte("v"), time.Time{})
	if _, exp, ok := m.Get([]byte("soon"), nil); !ok || exp != clock.at(time.Second).UnixNano() {
		t.Fatalf("soon: %d, %v", exp, ok)
	}
	clock.t += int64(time.Second)
	if _, _, ok := m.Get([]byte("soon"), nil); ok {
		t.Fatal("hit on an expired entry")
	}
	if m.Len() != 2 || m.Stats().Expirations != 1 {
		t.Fatalf("expired entry not dropped: Len %d, %+v", m.Len(), m.Stats())
	}
	// "later" expires while queued: eviction counts it, OnEvict skips it.
	clock.t += int64(time.Hour)
	for i := range 200 {
		m.Set(fmt.Appendf(nil, "fill%d", i), make([]byte, 100), time.Time{})
	}
	for _, k := range evicted {
		if k == "later" {
			t.Fatal("OnEvict called for an expired entry")
		}
	}
	if st := m.Stats(); st.Expirations != 2 || st.Refused != 2 {
		t.Fatalf("stats %+v", st)
	}
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
}

// TestHashCollision injects a hash that maps every key to one value:
// a lookup of another key with the same hash misses, and a Set replaces.
func TestHashCollision(t *testing.T) {
	for _, p := range []Policy{S3FIFO, LRU, FIFO} {
		t.Run(string(p), func(t *testing.T) {
			m := newTestCache(t, Options{Policy: p, Capacity: 1 << 20, Shards: 4},
				0) // every key hashes to 0
			m.Set([]byte("a"), []byte("A"), time.Time{})
			if _, _, ok := m.Get([]byte("b"), nil); ok {
				t.Fatal("b hit a's entry")
			}
			if m.Delete([]byte("b")) {
				t.Fatal("Delete(b) removed a")
			}
			if v, _, ok := m.Get([]byte("a"), nil); !ok || string(v) != "A" {
				t.Fatal("a lost")
			}
			m.Set([]byte("b"), []byte("B"), time.Time{})
			if _, _, ok := m.Get([]byte("a"), nil); ok {
				t.Fatal("a still hit after b replaced it")
			}
			if v, _, ok := m.Get([]byte("b"), nil); !ok || string(v) != "B" || m.Len() != 1 {
				t.Fatalf("b: %q %v, Len %d", v, ok, m.Len())
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHitAllocates(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are off under -race")
	}
	for _, p := range []Policy{S3FIFO, LRU, FIFO} {
		t.Run(string(p), func(t *testing.T) {
			m := newTestCache(t, Options{Policy: p, Capacity: 1 << 20, Shards: 4, BlockSize: 64}, ^uint64(0))
			key, value := []byte("some/cache/key"), bytes.Repeat([]byte("v"), 1000)
			exp := time.Now().Add(time.Hour)
			m.Set(key, value, exp)
			dst := make([]byte, 0, 1024)
			allocs := testing.AllocsPerRun(100, func() {
				if v, _, ok := m.Get(key, dst); !ok || len(v) != len(value) {
					t.Fatal("miss")
				}
				m.Get([]byte("absent"), dst)
			})
			if allocs != 0 {
				t.Fatalf("Get allocates %.1f times per hit", allocs)
			}
		})
	}
}

// TestCloseRacingOps closes a Cache while goroutines keep hitting,
// setting (large values too: the unlocked copy) and deleting: nothing may
// fault or serve foreign bytes, and once Close has returned every Get
// misses and every Set refuses.
func TestCloseRacingOps(t *testing.T) {
	m, err := New(Options{Capacity: 4 << 20, Shards: 2, BlockSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	var closed atomic.Bool
	var ops atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			var dst []byte
			for i := 0; ; i++ {
				key := fmt.Appendf(nil, "k%d", (i*7+w)%64)
				after := closed.Load()
				if m.Set(key, modelValue(key, uint64(i), (i%3)*3000), time.Time{}) && after {
					errs <- fmt.Errorf("Set stored after Close")
					return
				}
				v, _, ok := m.Get(key, dst[:0])
				if ok {
					if after {
						errs <- fmt.Errorf("Get hit after Close")
						return
					}
					if _, err := modelCheck(key, v); err != nil {
						errs <- err
						return
					}
					dst = v
				}
				if i%5 == 0 {
					m.Delete(key)
				}
				if after {
					return
				}
				ops.Add(1)
			}
		})
	}
	for ops.Load() < 4000 {
		runtime.Gosched()
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	closed.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

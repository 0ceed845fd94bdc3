package memory

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"
	"time"
)

// benchKey writes the 16-byte key of entry i into k.
func benchKey(k []byte, i uint64) []byte {
	k = append(k[:0], "key:"...)
	return binary.BigEndian.AppendUint64(append(k, "...."...), i)
}

// testFill sets n entries of a 16-byte key and a size-byte value.
func testFill(m *Cache, n, size int) {
	var k []byte
	v := make([]byte, size)
	for i := range n {
		k = benchKey(k, uint64(i))
		m.Set(k, v, time.Time{})
	}
}

// TestOverhead measures the heap bytes each entry really costs beyond
// its arena blocks (slot pages, index map, ghost ring and entries, block
// links) after enough churn to fill the ghost, and fails if that exceeds
// the charge (entryOverhead plus 4 bytes of link per block).
func TestOverhead(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("measurement: off under -race and -short")
	}
	const n, size = 100_000, 24 // 16-byte key, header: 64 bytes, one block each
	charge := int64(64 + 4 + entryOverhead)
	var before, after runtime.MemStats
	// Twice: garbage of earlier tests with cleanups needs a second cycle.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := newTestCache(t, Options{Capacity: n * charge, Shards: 8, BlockSize: 64}, ^uint64(0))
	testFill(m, 3*n, size) // churn: the last n live, ghosts of the others
	runtime.GC()
	runtime.ReadMemStats(&after)
	entries := m.Len()
	heap := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(entries)
	t.Logf("%d entries, %.1f heap bytes/entry (charged: %d overhead + 4 link); %d ghost hashes",
		entries, heap, entryOverhead, m.ghosts())
	if entries < n*9/10 {
		t.Fatalf("only %d of %d entries fit", entries, n)
	}
	if heap > entryOverhead+4 {
		t.Fatalf("heap %.1f bytes/entry > charged %d", heap, entryOverhead+4)
	}
	runtime.KeepAlive(m)
}

func (m *Cache) ghosts() int {
	n := 0
	for i := range m.shards {
		n += m.shards[i].ghost.n
	}
	return n
}

// BenchmarkGC measures a full runtime.GC with 1 million entries held
// (median of 5), against map[string][]byte as the baseline.
//
//	go test ./hybrid/memory -run '^$' -bench GC -benchtime 1x
func BenchmarkGC(b *testing.B) {
	const n, size = 1_000_000, 100
	b.Run("empty", reportGC)
	b.Run("Cache", func(b *testing.B) {
		o := Options{BlockSize: 64}
		o.Capacity = n * (&config{block: o.BlockSize}).charge(16+size) * 11 / 10
		m, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		testFill(m, n, size)
		reportGC(b)
		if m.Len() != n {
			b.Fatalf("%d of %d entries held", m.Len(), n)
		}
		b.ReportMetric(float64(m.Bytes())/float64(m.Len()), "B/entry")
		runtime.KeepAlive(m)
	})
	b.Run("map[string][]byte", func(b *testing.B) {
		mp := make(map[string][]byte)
		var k []byte
		for i := range n {
			k = benchKey(k, uint64(i))
			mp[string(k)] = make([]byte, size)
		}
		reportGC(b)
		runtime.KeepAlive(mp)
	})
}

func reportGC(b *testing.B) {
	for b.Loop() {
		var d []time.Duration
		for range 5 {
			start := time.Now()
			runtime.GC()
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[2].Microseconds())/1000, "ms/GC")
	}
}

// BenchmarkGet measures parallel hits on 100k entries of 100 bytes.
func BenchmarkGet(b *testing.B) {
	for _, p := range []Policy{S3FIFO, LRU, FIFO} {
		b.Run(string(p), func(b *testing.B) {
			const n = 100_000
			m, err := New(Options{Policy: p, Capacity: 64 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			testFill(m, n, 100)
			b.ResetTimer()
			b.ReportAllocs()
			b.SetBytes(100)
			b.RunParallel(func(pb *testing.PB) {
				k, dst := make([]byte, 0, 16), make([]byte, 0, 128)
				i := uint64(time.Now().UnixNano())
				for pb.Next() {
					i = i*6364136223846793005 + 1442695040888963407
					k = benchKey(k, (i>>33)%n)
					if _, _, ok := m.Get(k, dst); !ok {
						b.Fatal("miss")
					}
				}
			})
		})
	}
}

// BenchmarkSet measures sets of 1 KiB values under constant eviction.
func BenchmarkSet(b *testing.B) {
	m, err := New(Options{Capacity: 16 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	v := make([]byte, 1024)
	b.ReportAllocs()
	b.SetBytes(1024)
	var k []byte
	var i uint64
	for b.Loop() {
		i++
		k = benchKey(k, i)
		m.Set(k, v, time.Time{})
	}
}

// BenchmarkSetFill measures sets of a proxy miss's record (a 1 KiB body
// plus ~300 bytes of header) into an empty 256 MiB tier, as misses fill a
// fresh cache: arena chunks, slot pages and the index grow, nothing is
// evicted. A new tier replaces the old one (timer stopped) before it fills.
func BenchmarkSetFill(b *testing.B) {
	const capacity, size = 256 << 20, 1300
	per := int(capacity / (int64(size+16+headerSize+255)/256*260 + entryOverhead))
	v := make([]byte, size)
	var m *Cache
	newCache := func() {
		if m != nil {
			m.Close()
		}
		var err error
		if m, err = New(Options{Capacity: capacity}); err != nil {
			b.Fatal(err)
		}
	}
	newCache()
	b.Cleanup(func() { m.Close() })
	b.ReportAllocs()
	b.SetBytes(size)
	var k []byte
	i := 0
	for b.Loop() {
		if i++; i%(per*3/4) == 0 {
			b.StopTimer()
			newCache()
			b.StartTimer()
		}
		k = benchKey(k, uint64(i))
		if !m.Set(k, v, time.Time{}) {
			b.Fatal("refused")
		}
	}
}

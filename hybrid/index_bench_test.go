package hybrid

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// Benchmarks of the disk index, side by side with the obvious alternative:
// the same sharding over Go's map[uint64]uint64 (swiss tables).
//
//	go test -run '^$' -bench 'Index(Get|Set|Mixed)' -benchtime 1s ./hybrid/
//	go test -run '^$' -bench 'Index(Footprint|FullGC)' -benchtime 1x ./hybrid/

type ixBenchTarget interface {
	get(h uint64) (uint64, bool)
	set(h, v uint64) (uint64, bool)
	remove(h uint64) (uint64, bool)
}

// ixMapIndex shards map[uint64]uint64 exactly as index shards its tables.
type ixMapIndex struct {
	shards []ixMapShard
	shift  uint
}

type ixMapShard struct {
	mu sync.RWMutex
	m  map[uint64]uint64
	_  [128 - unsafe.Sizeof(sync.RWMutex{}) - 8]byte
}

func newIxMapIndex(hint int) *ixMapIndex {
	n := ixShardCountFor(runtime.GOMAXPROCS(0))
	mx := &ixMapIndex{shards: make([]ixMapShard, n), shift: uint(64 - bits.TrailingZeros(uint(n)))}
	for i := range mx.shards {
		mx.shards[i].m = make(map[uint64]uint64, ixPerShardCapacity(hint, n))
	}
	return mx
}

func (mx *ixMapIndex) get(h uint64) (uint64, bool) {
	s := &mx.shards[h>>mx.shift]
	s.mu.RLock()
	v, ok := s.m[h]
	s.mu.RUnlock()
	return v, ok
}

func (mx *ixMapIndex) set(h, v uint64) (uint64, bool) {
	s := &mx.shards[h>>mx.shift]
	s.mu.Lock()
	old, ok := s.m[h]
	s.m[h] = v
	s.mu.Unlock()
	return old, ok
}

func (mx *ixMapIndex) remove(h uint64) (uint64, bool) {
	s := &mx.shards[h>>mx.shift]
	s.mu.Lock()
	old, ok := s.m[h]
	delete(s.m, h)
	s.mu.Unlock()
	return old, ok
}

var ixBenchImpls = []struct {
	name string
	make func(hint int) ixBenchTarget
}{
	{"table", func(hint int) ixBenchTarget { return newIndex(hint) }},
	{"map", func(hint int) ixBenchTarget { return newIxMapIndex(hint) }},
}

const ixBenchEntries = 1 << 20

func ixBenchKeys(n int, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, seed))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	return keys
}

// ixBenchParallel fills each implementation with ixBenchEntries keys and
// runs op from every goroutine, each walking the keys from its own start.
func ixBenchParallel(b *testing.B, op func(t ixBenchTarget, keys []uint64, i int)) {
	keys := ixBenchKeys(ixBenchEntries, 1)
	for _, impl := range ixBenchImpls {
		b.Run(impl.name, func(b *testing.B) {
			t := impl.make(ixBenchEntries)
			for i, h := range keys {
				t.set(h, uint64(i))
			}
			var start atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(start.Add(99991))
				for pb.Next() {
					op(t, keys, i)
					i++
				}
			})
		})
	}
}

func BenchmarkIndexGet(b *testing.B) {
	ixBenchParallel(b, func(t ixBenchTarget, keys []uint64, i int) {
		t.get(keys[i&(ixBenchEntries-1)])
	})
}

func BenchmarkIndexGetMiss(b *testing.B) {
	ixBenchParallel(b, func(t ixBenchTarget, keys []uint64, i int) {
		t.get(^keys[i&(ixBenchEntries-1)])
	})
}

func BenchmarkIndexSet(b *testing.B) {
	ixBenchParallel(b, func(t ixBenchTarget, keys []uint64, i int) {
		t.set(keys[i&(ixBenchEntries-1)], uint64(i))
	})
}

// BenchmarkIndexMixed: 90% hits, 5% overwrites, 5% remove-then-insert of
// one key (the churn of reclaim and flush).
func BenchmarkIndexMixed(b *testing.B) {
	ixBenchParallel(b, func(t ixBenchTarget, keys []uint64, i int) {
		h := keys[i&(ixBenchEntries-1)]
		switch i % 20 {
		case 0:
			t.set(h, uint64(i))
		case 1:
			t.remove(h)
			t.set(h, uint64(i))
		default:
			t.get(h)
		}
	})
}

// BenchmarkIndexFootprint reports heap bytes per entry (HeapAlloc delta
// across building the index, after full GCs) with and without a size hint.
func BenchmarkIndexFootprint(b *testing.B) {
	for _, n := range []int{1_000_000, 5_000_000} {
		for _, impl := range ixBenchImpls {
			for _, hinted := range []bool{false, true} {
				name := impl.name + "/n=" + strconv.Itoa(n/1_000_000) + "M/hint=" + strconv.FormatBool(hinted)
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						b.ReportMetric(ixHeapPerEntry(impl.make, n, hinted), "B/entry")
					}
				})
			}
		}
	}
}

func ixHeapPerEntry(mk func(int) ixBenchTarget, n int, hinted bool) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	hint := 0
	if hinted {
		hint = n
	}
	t := mk(hint)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range n {
		t.set(rng.Uint64(), uint64(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(t)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// BenchmarkIndexFullGC times runtime.GC() with 5M entries held, against an
// empty baseline; it reports the median wall time of all GCs timed and
// the mean stop-the-world pause.
func BenchmarkIndexFullGC(b *testing.B) {
	const n = 5_000_000
	for _, impl := range append([]struct {
		name string
		make func(hint int) ixBenchTarget
	}{{"empty", nil}}, ixBenchImpls...) {
		b.Run(impl.name, func(b *testing.B) {
			var t ixBenchTarget
			if impl.make != nil {
				t = impl.make(0)
				rng := rand.New(rand.NewPCG(9, 10))
				for i := range n {
					t.set(rng.Uint64(), uint64(i))
				}
			}
			var times []time.Duration
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				for range 5 {
					start := time.Now()
					runtime.GC()
					times = append(times, time.Since(start))
				}
			}
			runtime.ReadMemStats(&after)
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "ms/gc-median")
			stw := after.PauseTotalNs - before.PauseTotalNs
			b.ReportMetric(float64(stw)/float64(after.NumGC-before.NumGC)/1e3, "µs-stw/gc")
			runtime.KeepAlive(t)
		})
	}
}

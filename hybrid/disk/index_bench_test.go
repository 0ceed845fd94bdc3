package disk

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

type benchTarget interface {
	get(h uint64) (uint64, bool)
	set(h, v uint64) (uint64, bool)
	remove(h uint64) (uint64, bool)
}

// mapIndex shards map[uint64]uint64 exactly as index shards its tables.
type mapIndex struct {
	shards []mapShard
	shift  uint
}

type mapShard struct {
	mu sync.RWMutex
	m  map[uint64]uint64
	_  [128 - unsafe.Sizeof(sync.RWMutex{}) - 8]byte
}

func newMapIndex(hint int) *mapIndex {
	n := shardCountFor(runtime.GOMAXPROCS(0))
	mx := &mapIndex{shards: make([]mapShard, n), shift: uint(64 - bits.TrailingZeros(uint(n)))}
	for i := range mx.shards {
		mx.shards[i].m = make(map[uint64]uint64, perShardCapacity(hint, n))
	}
	return mx
}

func (mx *mapIndex) get(h uint64) (uint64, bool) {
	s := &mx.shards[h>>mx.shift]
	s.mu.RLock()
	v, ok := s.m[h]
	s.mu.RUnlock()
	return v, ok
}

func (mx *mapIndex) set(h, v uint64) (uint64, bool) {
	s := &mx.shards[h>>mx.shift]
	s.mu.Lock()
	old, ok := s.m[h]
	s.m[h] = v
	s.mu.Unlock()
	return old, ok
}

func (mx *mapIndex) remove(h uint64) (uint64, bool) {
	s := &mx.shards[h>>mx.shift]
	s.mu.Lock()
	old, ok := s.m[h]
	delete(s.m, h)
	s.mu.Unlock()
	return old, ok
}

var benchImpls = []struct {
	name string
	make func(hint int) benchTarget
}{
	{"table", func(hint int) benchTarget { return newIndex(hint) }},
	{"map", func(hint int) benchTarget { return newMapIndex(hint) }},
}

const benchEntries = 1 << 20

func benchKeys(n int, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, seed))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	return keys
}

// benchParallel fills each implementation with benchEntries keys and
// runs op from every goroutine, each walking the keys from its own start.
func benchParallel(b *testing.B, op func(t benchTarget, keys []uint64, i int)) {
	keys := benchKeys(benchEntries, 1)
	for _, impl := range benchImpls {
		b.Run(impl.name, func(b *testing.B) {
			t := impl.make(benchEntries)
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
	benchParallel(b, func(t benchTarget, keys []uint64, i int) {
		t.get(keys[i&(benchEntries-1)])
	})
}

func BenchmarkIndexGetMiss(b *testing.B) {
	benchParallel(b, func(t benchTarget, keys []uint64, i int) {
		t.get(^keys[i&(benchEntries-1)])
	})
}

func BenchmarkIndexSet(b *testing.B) {
	benchParallel(b, func(t benchTarget, keys []uint64, i int) {
		t.set(keys[i&(benchEntries-1)], uint64(i))
	})
}

// BenchmarkIndexMixed: 90% hits, 5% overwrites, 5% remove-then-insert of
// one key (the churn of reclaim and flush).
func BenchmarkIndexMixed(b *testing.B) {
	benchParallel(b, func(t benchTarget, keys []uint64, i int) {
		h := keys[i&(benchEntries-1)]
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
		for _, impl := range benchImpls {
			for _, hinted := range []bool{false, true} {
				name := impl.name + "/n=" + strconv.Itoa(n/1_000_000) + "M/hint=" + strconv.FormatBool(hinted)
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						b.ReportMetric(heapPerEntry(impl.make, n, hinted), "B/entry")
					}
				})
			}
		}
	}
}

func heapPerEntry(mk func(int) benchTarget, n int, hinted bool) float64 {
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
		make func(hint int) benchTarget
	}{{"empty", nil}}, benchImpls...) {
		b.Run(impl.name, func(b *testing.B) {
			var t benchTarget
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

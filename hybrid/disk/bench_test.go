package disk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func benchOpts() Options {
	o := testOpts()
	o.RegionSize, o.BufferSize, o.QueueBytes = 4<<20, 1<<20, 16<<20
	o.FlushDelay = time.Millisecond
	return o
}

// BenchmarkInsert: the caller's cost of Insert of 1 KiB values
// (copy, pending set, queue). Drops are reported, not hidden.
func BenchmarkInsert(b *testing.B) {
	e := openT(b, newMem(b, 64<<20), benchOpts())
	defer closeT(b, e)
	v := make([]byte, 1024)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%d", i))
	}
	b.ReportAllocs()
	b.SetBytes(1024)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Insert(keys[i&(len(keys)-1)], v, time.Time{})
	}
	b.StopTimer()
	s := e.Stats()
	b.ReportMetric(float64(s.DropQueue)/float64(b.N), "drops/op")
}

// BenchmarkGetDisk: disk hits of 1 KiB values at 1, 8 and 32
// goroutines, per runtime mode.
func BenchmarkGetDisk(b *testing.B) {
	for _, mode := range []RuntimeMode{RuntimeDisabled, RuntimeSeparated} {
		for _, g := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/g%d", mode, g), func(b *testing.B) {
				o := benchOpts()
				o.Runtime = mode
				e := openT(b, newMem(b, 64<<20), o)
				defer closeT(b, e)
				const n = 20000
				keys := make([][]byte, n)
				for i := range keys {
					keys[i] = []byte(fmt.Sprintf("key-%d", i))
					for !e.Insert(keys[i], make([]byte, 1024), time.Time{}) {
						settle(b, e)
					}
				}
				settle(b, e)
				var next atomic.Uint64
				b.ReportAllocs()
				b.SetBytes(1024)
				b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					dst := make([]byte, 0, 2048)
					i := next.Add(7919)
					for pb.Next() {
						i++
						dst, _ = e.Get(keys[i%n], dst[:0])
					}
				})
				b.StopTimer()
				s := e.Stats()
				b.ReportMetric(float64(s.Hits-s.PendingHits)/float64(s.Gets), "hit-ratio")
			})
		}
	}
}

// BenchmarkWriteFile: write throughput of 16 KiB entries to a file
// device (blockdev.Open, O_DIRECT) with no admission limit. bench/engine-bench
// compares the same against fio.
func BenchmarkWriteFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "dev")
	dev, err := openFileDev(path, 512<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	o := benchOpts()
	o.RegionSize, o.BufferSize, o.QueueBytes, o.Flushers = 16<<20, 4<<20, 64<<20, 2
	e := openT(b, dev, o)
	v := make([]byte, 16<<10)
	b.SetBytes(int64(len(v)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for !e.Insert([]byte(fmt.Sprintf("k%d", i)), v, time.Time{}) {
			time.Sleep(50 * time.Microsecond) // queue full: wait for the disk
		}
	}
	closeT(b, e)
	b.StopTimer()
	s := e.Stats()
	b.ReportMetric(float64(s.BytesWritten)/float64(s.PayloadWritten), "dev-bytes/payload")
}

// BenchmarkEngineRecover4G fills a 4 GiB file with 16 KiB entries once,
// then measures Open (quiet recovery). Run only with
// STRATA_BENCH_DIR set (it writes 4 GiB there).
func BenchmarkEngineRecover4G(b *testing.B) {
	dir := os.Getenv("STRATA_BENCH_DIR")
	if dir == "" {
		b.Skip("set STRATA_BENCH_DIR to a directory with 4 GiB free")
	}
	path := filepath.Join(dir, "strata-recover-bench.dev")
	defer os.Remove(path)
	const size = 4 << 30
	dev, err := openFileDev(path, size)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	o := benchOpts()
	o.RegionSize, o.BufferSize, o.QueueBytes = 16<<20, 4<<20, 64<<20
	e := openT(b, dev, o)
	v := make([]byte, 16<<10-64)
	for i := 0; e.Stats().BytesWritten < size-(64<<20); i++ {
		for !e.Insert([]byte(fmt.Sprintf("k%d", i)), v, time.Time{}) {
			time.Sleep(50 * time.Microsecond)
		}
	}
	if err := e.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e = openT(b, dev, o)
		b.StopTimer()
		s := e.Stats()
		b.ReportMetric(float64(s.Recovered), "entries")
		b.ReportMetric(float64(s.RecoveredBatches), "batches")
		closeT(b, e)
		b.StartTimer()
	}
}

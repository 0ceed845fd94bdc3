package accesslog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// BenchmarkWrite: the cost a request pays (format and buffer) plus the
// writer's, per line, to a file, from GOMAXPROCS goroutines each on a
// connection of its own. The goroutines write lines faster than the
// writer can take them (with -cpu 1, most are dropped: dropped/op), so
// for the writer's own part see BenchmarkWriter.
func BenchmarkWrite(b *testing.B) {
	for _, format := range []string{FormatCombined, FormatJSON} {
		b.Run(format, func(b *testing.B) {
			l, err := Open(Options{Path: filepath.Join(b.TempDir(), "access.log"), Format: format, BufferLines: 1 << 16})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(AppendCombined(nil, entry()))))
			var conns atomic.Uint64
			cpu0 := cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				e := entry()
				e.Conn = conns.Add(1) // each goroutine a connection, as fasthttp's workers
				for pb.Next() {
					l.Write(e)
				}
			})
			b.StopTimer()
			if err := l.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			// The process's CPU time (user and system) a line, the writer's
			// included up to Close: time spent waiting (the kernel throttling
			// the writer's page-cache writes) is not in it, and lines dropped
			// meanwhile are counted apart.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(testutil.ToFloat64(l.m.dropped)/float64(b.N), "dropped/op")
		})
	}
}

// TestWriteAllocs: formatting and queueing a line allocates nothing once
// the buffer pool is warm.
func TestWriteAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	l, err := Open(Options{Path: filepath.Join(t.TempDir(), "access.log"), BufferLines: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog(t, l)
	e := entry()
	for range 2000 { // the free list grows to the queue's depth
		l.Write(e)
	}
	for testutil.ToFloat64(l.m.written) < 2000 { // the spare buffers are back
		time.Sleep(time.Millisecond)
	}
	if a := testing.AllocsPerRun(1000, func() { l.Write(e) }); a > 0.05 {
		t.Errorf("Write allocates %v a line", a)
	}
}

// BenchmarkFileAppend: appending 64 KiB at a time to a file (in the test's
// temp dir, as the page cache takes it), each write ending on a multiple
// of writeAlign or each beginning 100 bytes past one: what the writer's
// alignment (writeBuffered) is for. The file is cut back to its start
// every 256 MiB.
func BenchmarkFileAppend(b *testing.B) {
	for _, tc := range []struct {
		name string
		skew int
	}{{"aligned", 0}, {"skewed", 100}} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "append"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := bytes.Repeat([]byte("0123456789abcde\n"), writeAlign/16)
			start := func() {
				if err := f.Truncate(0); err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(buf[:tc.skew]); err != nil {
					b.Fatal(err)
				}
			}
			start()
			b.SetBytes(writeAlign)
			b.ResetTimer()
			for i := range b.N {
				if i%4096 == 4095 {
					b.StopTimer()
					start()
					b.StartTimer()
				}
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWriter: the writer's part of a JSON line alone (take, merge,
// the write and what the kernel does for it), driven by hand on one
// goroutine, with a wake-up every 64 KiB of lines and a tick every 6,000
// lines (100 ms at 60k requests a second): "aligned" writes up to a
// writeAlign boundary at the wake-ups, as the writer does; "whole" writes
// everything buffered each time, as it did before.
func BenchmarkWriter(b *testing.B) {
	line := AppendJSON(nil, entry())
	perWake := writeAlign / len(line)
	for _, tc := range []struct {
		name    string
		aligned bool
	}{{"aligned", true}, {"whole", false}} {
		b.Run(tc.name, func(b *testing.B) {
			l := handLog(b, filepath.Join(b.TempDir(), "access.log"), DefaultBufferLines*lineBytes)
			b.SetBytes(int64(len(line)))
			cpu0 := cpuTime(b)
			for i := range b.N {
				if !l.add(uint64(i), line) {
					b.Fatal("a line dropped")
				}
				if i%6000 == 5999 {
					l.writeBuffered(true)
				} else if i%perWake == perWake-1 {
					l.writeBuffered(!tc.aligned)
				}
				if i%(1<<20) == (1<<20)-1 { // keep the file to a few hundred MiB
					b.StopTimer()
					l.writeBuffered(true)
					if err := l.file.Truncate(0); err != nil {
						b.Fatal(err)
					}
					l.offset = 0
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

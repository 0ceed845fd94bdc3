package accesslog

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// BenchmarkWrite: the cost a request pays (format and buffer) plus the
// writer's, per line, to a file, from GOMAXPROCS goroutines each on a
// connection of its own.
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

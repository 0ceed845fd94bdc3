package accesslog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestWriteBufferedAligns drives the writer's steps by hand (no writer
// goroutine): a write woken by the lines in the buffers ends on a
// writeAlign boundary of the file, or is not made while the lines reach
// none; the rest waits for the next write, and a write of everything (the
// tick's, the close's) leaves nothing behind. Lines are in order, none is
// lost or doubled, and the written counter counts whole lines only. A
// file truncated under the writer (logrotate's copytruncate) is aligned
// to again from the write after the one that found it truncated.
func TestWriteBufferedAligns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	head := strings.Repeat("x", 99) + "\n" // a file that does not start on a boundary
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	l := handLog(t, path, 1<<20)

	var want bytes.Buffer // every line added since the last truncation
	want.WriteString(head)
	next, lines := 0, 0
	add := func(n int) {
		for range n {
			line := fmt.Sprintf("line %06d %s\n", next, strings.Repeat("p", next%300))
			if !l.add(uint64(next), []byte(line)) {
				t.Fatal("a line dropped")
			}
			want.WriteString(line)
			next++
			lines++
		}
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	truncated := false
	for round := range 40 {
		add(50 + 13*round)
		before := size()
		l.writeBuffered(false)
		after := size()
		if after != before && after%writeAlign != 0 && !(truncated && round == 21) {
			t.Fatalf("round %d: a woken write ended at %d, not on a %d-byte boundary", round, after, writeAlign)
		}
		if after/writeAlign > before/writeAlign+1 && len(l.outBuf) >= writeAlign {
			t.Fatalf("round %d: %d bytes held back past a boundary", round, len(l.outBuf))
		}
		if got := after + int64(len(l.outBuf)); got != int64(want.Len()) {
			t.Fatalf("round %d: file %d + held %d bytes, want %d", round, after, len(l.outBuf), want.Len())
		}
		if round == 20 { // copytruncate
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			want.Reset()
			want.Write(l.outBuf) // held lines land in the truncated file
			truncated = true
		}
	}
	l.writeBuffered(true)
	if len(l.outBuf) != 0 {
		t.Fatalf("%d bytes held after a write of everything", len(l.outBuf))
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("file holds %d bytes, want %d (or they differ)", len(got), want.Len())
	}
	if n := testutil.ToFloat64(l.m.written); int(n) != lines {
		t.Errorf("strata_access_log_lines_total = %v, want %d", n, lines)
	}
}

// handLog is a Log on path with budget bytes of buffers and no writer
// goroutine: a test calls writeBuffered itself.
func handLog(tb testing.TB, path string, budget int) *Log {
	tb.Helper()
	l := &Log{opts: Options{Path: path}}
	if err := l.newMetrics(nil); err != nil {
		tb.Fatal(err)
	}
	if err := l.open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(l.closeFile)
	l.buffers.init(budget, 2)
	l.wakeup = func() {}
	return l
}

package accesslog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func uriEntry(i int) *Entry {
	e := entry()
	e.URI = []byte("/n/" + strconv.Itoa(i))
	return e
}

// readLines reads path's lines, waiting (bounded) until there are n.
func readLines(t *testing.T, path string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(b) == 0 {
			lines = nil
		}
		if len(lines) >= n || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func closeLog(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"no path", Options{}},
		{"bad format", Options{Path: "-", Format: "clf"}},
		{"negative buffer", Options{Path: "-", BufferLines: -1}},
		{"missing directory", Options{Path: filepath.Join(t.TempDir(), "no", "such", "dir", "log")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if l, err := Open(tc.opts); err == nil {
				closeLog(t, l)
				t.Fatal("Open succeeded")
			}
		})
	}
}

// TestWriteAndClose: concurrent writers' lines all reach the file by
// Close, each whole, and the counters agree.
func TestWriteAndClose(t *testing.T) {
	for _, format := range []string{FormatCombined, FormatJSON} {
		t.Run(format, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "access.log")
			reg := prometheus.NewPedanticRegistry()
			l, err := Open(Options{Path: path, Format: format, Registerer: reg, BufferLines: 4096})
			if err != nil {
				t.Fatal(err)
			}
			const writers, each = 4, 500
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						l.Write(uriEntry(w*each + i))
					}
				}()
			}
			wg.Wait()
			closeLog(t, l)
			lines := readLines(t, path, writers*each)
			seen := map[string]bool{}
			for _, ln := range lines {
				i := strings.Index(ln, "/n/")
				j := strings.IndexAny(ln[i:], " \"")
				seen[ln[i:i+j]] = true
			}
			written := testutil.ToFloat64(l.m.written)
			dropped := testutil.ToFloat64(l.m.dropped)
			if len(seen) != len(lines) || float64(len(lines)) != written || written+dropped != writers*each {
				t.Errorf("%d lines (%d distinct), written %v, dropped %v; want %d in all", len(lines), len(seen), written, dropped, writers*each)
			}
			if dropped != 0 {
				t.Errorf("dropped %v with a queue that holds them all", dropped)
			}
			if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
				t.Errorf("lint: %v %v", probs, err)
			}
			l.Write(uriEntry(-1))
			if testutil.ToFloat64(l.m.dropped) != 1 {
				t.Error("a Write after Close is not counted as dropped")
			}
		})
	}
}

// blockingWriter blocks every Write until released; entered, if not
// nil, hears of a Write that blocks.
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	n       int
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	b.mu.Lock()
	b.n += strings.Count(string(p), "\n")
	b.mu.Unlock()
	return len(p), nil
}

// TestFullQueueDrops: with the output stuck, Write still returns at
// once; what the queue cannot hold is dropped and counted, and nothing
// is lost from what it did hold.
func TestFullQueueDrops(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{})}
	l, err := Open(Options{Path: "-", Stdout: bw, BufferLines: 16})
	if err != nil {
		t.Fatal(err)
	}
	// The first lines fill the 64 KiB write buffer until a flush blocks;
	// a few thousand more then find the queue full.
	const n = 5000
	start := time.Now()
	for i := range n {
		l.Write(uriEntry(i))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("%d writes took %v against a stuck output", n, d)
	}
	dropped := testutil.ToFloat64(l.m.dropped)
	if dropped == 0 {
		t.Fatal("nothing dropped against a stuck output")
	}
	close(bw.release)
	closeLog(t, l)
	if got := float64(bw.n) + dropped; got != n {
		t.Errorf("written %d + dropped %v = %v, want %d", bw.n, dropped, got, n)
	}
}

// TestCloseHonoursContext: against a stuck output, the first Close and a
// second one each return ctx's error when ctx ends, rather than wait for
// the writer; once the output moves, a third Close returns nil.
func TestCloseHonoursContext(t *testing.T) {
	bw := &blockingWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	l, err := Open(Options{Path: "-", Stdout: bw, BufferLines: 16})
	if err != nil {
		t.Fatal(err)
	}
	l.Write(uriEntry(0))
	l.wakeup()
	<-bw.entered // the writer is stuck in Write
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- l.Close(ctx) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Close %d against a stuck output: %v, want %v", i+1, err, context.DeadlineExceeded)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Close %d ignored its context's deadline", i+1)
		}
		cancel()
	}
	close(bw.release)
	closeLog(t, l)
}

// TestReopen: after the file is moved and Reopen called, lines go to a
// new file at the path; none is lost or doubled across the two.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	l, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		l.Write(uriEntry(i))
	}
	readLines(t, path, 100)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 150; i++ { // still to the moved file
		l.Write(uriEntry(i))
	}
	l.Reopen()
	for i := 150; i < 300; i++ {
		l.Write(uriEntry(i))
	}
	closeLog(t, l)
	old, cur := readLines(t, path+".1", 0), readLines(t, path, 0)
	if len(old) != 150 || len(cur) != 150 {
		t.Fatalf("moved file %d lines, new file %d; want 150 each (the split at Reopen)", len(old), len(cur))
	}
	if !strings.Contains(cur[len(cur)-1], "/n/299 ") || !strings.Contains(old[0], "/n/0 ") {
		t.Errorf("order: moved file starts %q, new file ends %q", old[0], cur[len(cur)-1])
	}
}

// TestReopenFailureKeepsOldFile: a path that cannot be reopened leaves
// the log writing to the file it has.
func TestReopenFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "access.log")
	if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Dir(path), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	l.Reopen()
	for i := range 10 {
		l.Write(uriEntry(i))
	}
	closeLog(t, l)
	if got := readLines(t, filepath.Join(dir, "moved", "access.log"), 10); len(got) != 10 {
		t.Errorf("%d lines in the old file, want 10", len(got))
	}
}

package accesslog

import (
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestOrderAcrossShards: lines of Writes made one after the other reach
// the file in that order, whichever connections (shards) they come from
// and whichever goroutines make them, while the writer takes lines
// meanwhile.
func TestOrderAcrossShards(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	l, err := Open(Options{Path: path, BufferLines: 1 << 14}) // the writer takes lines a few times meanwhile
	if err != nil {
		t.Fatal(err)
	}
	const writers, n = 4, 20000
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock() // Writes one at a time, in the order of i
				i := next
				next++
				if i < n {
					e := uriEntry(i)
					e.Conn = uint64(w + 7*i) // a shard of its own now and then
					l.Write(e)
				}
				mu.Unlock()
				if i >= n {
					return
				}
			}
		}()
	}
	wg.Wait()
	closeLog(t, l)
	lines := readLines(t, path, 0)
	if d := testutil.ToFloat64(l.m.dropped); d > 0 || len(lines) != n {
		t.Fatalf("%d lines, %v dropped; want %d", len(lines), d, n)
	}
	for i, ln := range lines {
		if !strings.Contains(ln, "/n/"+strconv.Itoa(i)+" ") {
			t.Fatalf("line %d is %q, want /n/%d's", i, ln, i)
		}
	}
}

// TestOneConnectionUsesTheBudget: the lines of one connection may take
// the whole buffer, not only their shard's share of it.
func TestOneConnectionUsesTheBudget(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{})}
	const bufferLines = 64
	l, err := Open(Options{Path: "-", Stdout: bw, BufferLines: bufferLines})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := range n {
		l.Write(uriEntry(i))
	}
	dropped := testutil.ToFloat64(l.m.dropped)
	held := n - int(dropped)
	lineLen := len(AppendCombined(nil, uriEntry(n)))
	if want := bufferLines * lineBytes / (lineLen + recordHeader) * 3 / 4; held < want {
		t.Errorf("one connection's lines held %d before drops, want at least %d", held, want)
	}
	close(bw.release)
	closeLog(t, l)
	if got := float64(bw.n) + dropped; got != n {
		t.Errorf("written %d + dropped %v = %v, want %d", bw.n, dropped, got, n)
	}
}

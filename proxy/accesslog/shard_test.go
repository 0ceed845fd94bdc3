package accesslog

import (
	"bytes"
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

// TestChunksReused: in a steady flow, the writer's takes give back the
// chunks that were just written and the shards take those again, so the
// same few chunks stay in use (and in the cache) rather than every chunk
// of the budget in turn.
func TestChunksReused(t *testing.T) {
	var b buffers
	b.init(8192*lineBytes, 2)
	b.wakeup = func() {}
	line := AppendCombined(nil, entry())
	used := map[*byte]bool{}
	for range 200 {
		for i := range 100 {
			if !b.add(uint64(i%3), line) {
				t.Fatal("a line dropped with the writer keeping up")
			}
		}
		for i := range b.shards {
			for _, c := range append(b.shards[i].full, b.shards[i].cur) {
				if cap(c) > 0 {
					used[&c[:1][0]] = true
				}
			}
		}
		b.merge(b.take())
		b.recycle()
		b.outBuf = b.outBuf[:0] // as the writer's write does
	}
	if n := len(b.free); n*b.chunk != 8192*lineBytes {
		t.Errorf("%d chunks of %d bytes free after the last take, want the whole budget", n, b.chunk)
	}
	if want := 100*(len(line)+recordHeader)/b.chunk + 3 + 1; len(used) > want {
		t.Errorf("%d distinct chunks used for 200 takes of 100 lines, want at most %d", len(used), want)
	}
}

// TestLongLineKeepsSlab: a line longer than a chunk gets a chunk of its
// own, and after the take every chunk of the slab made at init is free
// again: none is dropped for a new one allocated in its place.
func TestLongLineKeepsSlab(t *testing.T) {
	var b buffers
	b.init(64*lineBytes, 1)
	b.wakeup = func() {}
	slab := map[*byte]bool{}
	for _, c := range b.free {
		slab[&c[:1][0]] = true
	}
	long := make([]byte, 3*b.chunk)
	for range 5 {
		if !b.add(0, []byte("short\n")) || !b.add(0, long) || !b.add(1, long) {
			t.Fatal("a line dropped")
		}
		if got := b.merge(b.take()); len(got) != len("short\n")+2*len(long) {
			t.Fatalf("merged %d bytes", len(got))
		}
		b.recycle()
		b.outBuf = b.outBuf[:0] // as the writer's write does
	}
	if len(b.free) != len(slab) {
		t.Fatalf("%d chunks free, want the %d made at init", len(b.free), len(slab))
	}
	for _, c := range b.free {
		if cap(c) != b.chunk || !slab[&c[:1][0]] {
			t.Fatal("a free chunk is not one of the slab's")
		}
	}
}

// TestAddAfterClose: a Write that found the Log open just before Close,
// and reaches its shard only after the writer's last take, is refused
// (and so counted as dropped), not left in a buffer no one writes:
// written + dropped stays the number of Writes.
func TestAddAfterClose(t *testing.T) {
	l, err := Open(Options{Path: filepath.Join(t.TempDir(), "access.log")})
	if err != nil {
		t.Fatal(err)
	}
	closeLog(t, l)
	if l.add(1, AppendCombined(nil, entry())) {
		t.Error("a line was buffered after the writer's last take")
	}
}

// lockedBuffer is an io.Writer safe for the writer goroutine and a test.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	return len(p), nil
}

// TestLinesAtChunkEnds: lines of every length around the room a chunk
// has left (formatted in place, in the shard's scratch buffer, or past
// the room and moved) and longer than a chunk reach the output whole and
// in order, in both formats, on one connection and on several.
func TestLinesAtChunkEnds(t *testing.T) {
	for _, format := range []string{FormatCombined, FormatJSON} {
		t.Run(format, func(t *testing.T) {
			out := &lockedBuffer{}
			l, err := Open(Options{Path: "-", Stdout: out, Format: format, BufferLines: 1 << 16}) // 16 MiB: room for every line
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for i := range 3000 {
				e := uriEntry(i)
				e.URI = append(e.URI, "?p="...)
				e.URI = append(e.URI, strings.Repeat("x", i*7%(2*l.chunk))...)
				e.Conn = uint64(i % 5 / 4) // mostly one connection, sometimes another
				want = appendLine(want, e, format == FormatJSON)
				l.Write(e)
			}
			closeLog(t, l)
			if d := testutil.ToFloat64(l.m.dropped); d > 0 {
				t.Fatalf("%v lines dropped", d)
			}
			if !bytes.Equal(out.b, want) {
				got, exp := strings.Split(string(out.b), "\n"), strings.Split(string(want), "\n")
				for i := range min(len(got), len(exp)) {
					if got[i] != exp[i] {
						t.Fatalf("line %d is\n%.200q\nwant\n%.200q", i, got[i], exp[i])
					}
				}
				t.Fatalf("%d lines, want %d", len(got), len(exp))
			}
		})
	}
}

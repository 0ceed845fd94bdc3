package accesslog

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConnOrder: lines of one connection reach the file in the order of
// their Writes, whichever shard they share and however batches of
// different shards interleave (small batches, many hand-overs).
func TestConnOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	l, err := Open(Options{Path: path, BufferLines: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	const conns, each = 24, 400
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e := entry()
				e.Conn = uint64(c)
				e.URI = fmt.Appendf(nil, "/c/%d/%d", c, i)
				l.Write(e)
			}
		}()
	}
	wg.Wait()
	closeLog(t, l)
	next := make([]int, conns)
	for _, ln := range readLines(t, path, conns*each) {
		var c, i int
		k := strings.Index(ln, "/c/")
		if _, err := fmt.Sscanf(ln[k:], "/c/%d/%d", &c, &i); err != nil {
			t.Fatalf("line %q: %v", ln, err)
		}
		if i != next[c] {
			t.Fatalf("connection %d: line %d after %d", c, i, next[c]-1)
		}
		next[c]++
	}
	for c, n := range next {
		if n != each {
			t.Errorf("connection %d: %d lines, want %d", c, n, each)
		}
	}
}

// TestCoarseTime: a line without a time gets the Log's current second.
func TestCoarseTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	l, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Truncate(time.Second)
	e := entry()
	e.Time = time.Time{}
	l.Write(e)
	after := time.Now()
	closeLog(t, l)
	ln := readLines(t, path, 1)[0]
	got, err := time.Parse(combinedTime, ln[strings.Index(ln, "[")+1:strings.Index(ln, "]")])
	if err != nil {
		t.Fatal(err)
	}
	if got.Before(before.Add(-clockEvery-time.Second)) || got.After(after) {
		t.Errorf("line stamped %v, want within [%v, %v]", got, before, after)
	}
}

package accesslog

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

// TestClockWhileWriteBlocks: a write stuck on a slow disk does not stop
// the clock (it did when the writer kept it: lines were stamped seconds
// late on a loaded machine).
func TestClockWhileWriteBlocks(t *testing.T) {
	w := &blockingWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	l, err := Open(Options{Path: "-", Stdout: w})
	if err != nil {
		t.Fatal(err)
	}
	l.Write(entry())
	select {
	case <-w.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer never wrote")
	}
	l.sec.Store(0)
	deadline := time.Now().Add(5 * time.Second)
	for l.sec.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(clockEvery)
	}
	if l.sec.Load() == 0 {
		t.Error("the clock stood still while a write blocked")
	}
	close(w.release)
	closeLog(t, l)
}

// TestNextTick: the coarse clock wakes as the next second starts, and
// never sleeps longer than clockEvery.
func TestNextTick(t *testing.T) {
	for _, tc := range []struct {
		ns   int
		want time.Duration
	}{
		{999_000_000, time.Millisecond},
		{999_999_999, time.Nanosecond},
		{950_000_000, 50 * time.Millisecond},
		{0, clockEvery},
		{500_000_000, clockEvery},
	} {
		if got := nextTick(time.Date(2026, 12, 2, 7, 45, 1, tc.ns, time.UTC)); got != tc.want {
			t.Errorf("nextTick at .%09d = %v, want %v", tc.ns, got, tc.want)
		}
	}
}

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

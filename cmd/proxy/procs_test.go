package main

import (
	"os"
	"runtime"
	"testing"
)

// TestSetProcs: one P more than the runtime's default, unless GOMAXPROCS
// is set, which is left as it is.
func TestSetProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	if v, ok := os.LookupEnv("GOMAXPROCS"); ok {
		t.Cleanup(func() { os.Setenv("GOMAXPROCS", v) })
	}
	os.Unsetenv("GOMAXPROCS")
	runtime.GOMAXPROCS(2)
	if n := setProcs(); n != 3 || runtime.GOMAXPROCS(0) != 3 {
		t.Fatalf("setProcs = %d, GOMAXPROCS %d; want 3 from 2", n, runtime.GOMAXPROCS(0))
	}
	t.Setenv("GOMAXPROCS", "2")
	runtime.GOMAXPROCS(2)
	if n := setProcs(); n != 2 || runtime.GOMAXPROCS(0) != 2 {
		t.Fatalf("with GOMAXPROCS set: setProcs = %d, GOMAXPROCS %d; want 2", n, runtime.GOMAXPROCS(0))
	}
}

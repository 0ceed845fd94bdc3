package main

import (
	"testing"
	"time"
)

// TestWriteDownBy: the write-down leaves a quarter of the shutdown time,
// at least a second and at most ten, to closing the cache.
func TestWriteDownBy(t *testing.T) {
	for _, tc := range []struct{ left, reserve time.Duration }{
		{30 * time.Second, 7500 * time.Millisecond},
		{2 * time.Second, time.Second},
		{0, time.Second},
		{time.Hour, 10 * time.Second},
	} {
		deadline := time.Now().Add(tc.left)
		got := deadline.Sub(writeDownBy(deadline))
		if d := got - tc.reserve; d < -50*time.Millisecond || d > 50*time.Millisecond {
			t.Errorf("%v left: reserve %v, want %v", tc.left, got, tc.reserve)
		}
	}
}

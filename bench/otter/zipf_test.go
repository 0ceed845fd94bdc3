package main

import (
	"math"
	"testing"
)

// TestZipf checks the generator against the exact probabilities of the
// first ranks and the head's share.
func TestZipf(t *testing.T) {
	const n, s, draws = 1000, 0.9, 400_000
	z := newZipf(n, s, 1)
	counts := make([]int, n)
	for range draws {
		counts[z.next()]++
	}
	h := 0.0
	for i := 1; i <= n; i++ {
		h += 1 / math.Pow(float64(i), s)
	}
	for _, i := range []int{0, 1, 9, 99} {
		want := draws / math.Pow(float64(i+1), s) / h
		if got := float64(counts[i]); math.Abs(got-want) > 5*math.Sqrt(want) {
			t.Errorf("rank %d drawn %.0f times, want %.0f", i, got, want)
		}
	}
}

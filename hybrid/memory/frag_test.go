package memory

import (
	"fmt"
	"testing"
	"time"
)

// TestLargeAfterSmallChurn: after the tier was filled twice over with
// small entries, large values evicting them are stored in few pieces: the
// blocks of consecutive victims, which small entries inserted in turn left
// next to each other, are handed out in that order (a hit then writes a
// few spans, not one per victim).
func TestLargeAfterSmallChurn(t *testing.T) {
	for _, tc := range []struct {
		small, large int
		maxSpans     float64 // average spans of a large value
	}{
		{1 << 10, 1 << 20, 6}, // at least two: a chunk holds 1 MiB
		{1 << 10, 256 << 10, 2},
		{1 << 10, 64 << 10, 1.5},
		{64 << 10, 1 << 20, 6},
	} {
		m, err := New(Options{Capacity: 64 << 20, Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		small := make([]byte, tc.small)
		for i := range 2 * (64 << 20) / tc.small {
			m.Set(fmt.Appendf(nil, "s-%d", i), small, time.Time{})
		}
		large := make([]byte, tc.large)
		var v Value
		spans, n := 0, 0
		for i := range 40 {
			k := fmt.Appendf(nil, "large-%d", i)
			m.Set(k, large, time.Time{})
			if _, ok := m.Lend(k, &v); ok {
				spans += len(v.Spans())
				n++
			}
			v.Release()
		}
		if n == 0 {
			t.Fatalf("%d after %d: nothing stored", tc.large, tc.small)
		}
		if avg := float64(spans) / float64(n); avg > tc.maxSpans {
			t.Errorf("%d B values after %d B churn: %.1f spans on average, want at most %.1f", tc.large, tc.small, avg, tc.maxSpans)
		}
		m.Close()
	}
}

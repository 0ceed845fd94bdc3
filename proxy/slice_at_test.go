package proxy

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestSliceSourceAt: at, which resumes from the piece it found last,
// returns what a walk from the first piece returns, for offsets that grow
// (a body's reads), jump back, or pass the end.
func TestSliceSourceAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ref := func(data []byte, more [][]byte, rel int64) []byte {
		if rel < int64(len(data)) {
			return data[rel:]
		}
		rel -= int64(len(data))
		for _, p := range more {
			if rel < int64(len(p)) {
				return p[rel:]
			}
			rel -= int64(len(p))
		}
		return nil
	}
	var r sliceSource
	for round := range 50 {
		data := make([]byte, rng.IntN(3000))
		more := make([][]byte, rng.IntN(800))
		total := int64(len(data))
		for i := range more {
			more[i] = make([]byte, 1+rng.IntN(2000))
			more[i][0] = byte(i) // pieces differ, so a wrong one shows
			total += int64(len(more[i]))
		}
		r.data, r.more = data, more
		r.atPiece, r.atBase = 0, 0 // as every place that sets more does
		var rel int64
		for q := range 3000 {
			switch {
			case q%97 == 0:
				rel = rng.Int64N(total + 10) // a jump, back or ahead
			default:
				rel += rng.Int64N(3000)
			}
			got, want := r.at(rel), ref(data, more, rel)
			if len(got) != len(want) || (len(got) > 0 && &got[0] != &want[0]) || !bytes.Equal(got, want) {
				t.Fatalf("round %d query %d: at(%d) gave %d bytes, want %d", round, q, rel, len(got), len(want))
			}
			if rel > total {
				rel = 0
			}
		}
	}
}

package memory

import (
	"math/rand/v2"
	"testing"
)

// TestMemTable runs random puts and deletes against a plain map, with
// hashes crowded onto a few homes near the end of the table so that probe
// runs are long and wrap around, and checks after every step that every
// key is found with its ref, absent keys are not, and every pair is
// reachable from its home (backward-shift deletion left no gap).
func TestMemTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		homes uint32 // distinct homes the hashes use; 0: any (random hashes)
		keys  int
	}{
		{"crowded", 3, 40},
		{"spread", 0, 200},
		{"one home", 1, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.keys)))
			tab := newMemTable(tableMinSlots)
			model := map[uint64]entryRef{}
			hashOf := func(k int) uint64 {
				if tc.homes == 0 {
					return uint64(k+1) * 0x9E3779B97F4A7C15
				}
				// home takes the low 32 bits: near all ones, they put
				// the home at the table's last slots whatever its size,
				// so the crowded runs wrap around.
				return uint64(k+1)<<32 | uint64(^uint32(0)-uint32(k)%tc.homes)
			}
			for step := range 5000 {
				h := hashOf(rng.IntN(tc.keys))
				if pos, _, ok := tab.find(h); ok && rng.IntN(3) == 0 {
					tab.del(pos)
					delete(model, h)
				} else {
					r := refOf(uint32(step)&refSlotMask, uint32(step))
					if tab.full() {
						tab = tab.grown()
					}
					tab.put(h, r)
					model[h] = r
				}
				if tab.used != len(model) {
					t.Fatalf("step %d: used %d, model %d", step, tab.used, len(model))
				}
				for k := range tc.keys {
					h := hashOf(k)
					_, r, ok := tab.find(h)
					if want, in := model[h]; ok != in || r != want {
						t.Fatalf("step %d: find(%x) = %#x, %v; want %#x, %v", step, h, r, ok, want, in)
					}
				}
			}
		})
	}
}

// TestMemRefFields checks that slot, block, ghost and hit count do not
// overlap in a ref.
func TestMemRefFields(t *testing.T) {
	for _, tc := range []struct {
		slot, block, freq uint32
	}{{0, 0, 0}, {refSlotMask, noBlock, maxFreq}, {12345, 678, 2}} {
		r := refOf(tc.slot, tc.block).withFreq(tc.freq)
		if r.slot() != tc.slot || r.block() != tc.block || r.freq() != tc.freq || r.ghost() {
			t.Errorf("%+v: got slot %d block %d freq %d ghost %v", tc, r.slot(), r.block(), r.freq(), r.ghost())
		}
		if r.withFreq(0).freq() != 0 || r.withFreq(0).slot() != tc.slot {
			t.Errorf("%+v: withFreq(0) disturbs other fields", tc)
		}
	}
	if g := ghostRef; !g.ghost() || g.freq() != 0 || g.slot() != 0 {
		t.Errorf("ghost ref %#x", g)
	}
}

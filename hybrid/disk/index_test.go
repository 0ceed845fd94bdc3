package disk

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// Fixed mixer keys so failures reproduce.
const (
	testK0 = 0x0123456789abcdef
	testK1 = 0xfedcba9876543210
)

func testIndex(t testing.TB, hint int) *index {
	t.Helper()
	ix := newIndexSeeded(hint, testK0, testK1)
	t.Cleanup(func() {
		if err := ix.checkConsistency(); err != nil {
			t.Error(err)
		}
	})
	return ix
}

// collidingKeys returns count hashes that, in ix, fall into shard and
// share their home slot at every table size below 2^32 slots: their mixed
// keys agree on every bit above the low 32 (prefix fills the 32 bits below
// the shard bits).
func collidingKeys(ix *index, shard, prefix uint64, count int) []uint64 {
	hs := make([]uint64, count)
	for i := range hs {
		m := shard<<ix.shift | (prefix&0xffff_ffff)<<(ix.shift-32) | uint64(i+1)
		hs[i] = ix.mix.unmix(m)
	}
	return hs
}

func TestIndexMixer(t *testing.T) {
	for _, k := range [][2]uint64{{0, 0}, {testK0, testK1}, {^uint64(0), ^uint64(0)}, {1, 2}} {
		mx := newMixer(k[0], k[1])
		if mx.k1*mx.k1inv != 1 {
			t.Fatalf("k1 %#x: inverse %#x is wrong", mx.k1, mx.k1inv)
		}
		for _, h := range []uint64{0, 1, 2, 1 << 63, ^uint64(0), 0xdeadbeef, testK0} {
			if got := mx.unmix(mx.mix(h)); got != h {
				t.Errorf("keys %#x: unmix(mix(%#x)) = %#x", k, h, got)
			}
			if got := mx.mix(mx.unmix(h)); got != h {
				t.Errorf("keys %#x: mix(unmix(%#x)) = %#x", k, h, got)
			}
		}
	}
	if mulC*mulCInv != 1 {
		t.Fatal("mulCInv is not the inverse of mulC")
	}
}

type step struct {
	op       string // get set remove car cas len
	key      string
	v, v2    uint64
	wantV    uint64
	wantOK   bool
	wantSize int
}

func TestIndexMethods(t *testing.T) {
	ix0 := newIndexSeeded(0, testK0, testK1)
	keys := map[string]uint64{
		"zero":    0,
		"max":     ^uint64(0),
		"mixzero": ix0.mix.unmix(0), // the key stored in the shard side field
		"lowA":    0x1_0000_0005,    // lowA..lowC agree in their low 32 bits
		"lowB":    0x2_0000_0005,
		"lowC":    0xffff_0000_0005,
	}
	common := func(k string) []step {
		return []step{
			{op: "get", key: k},
			{op: "remove", key: k},
			{op: "car", key: k, v: 0},
			{op: "cas", key: k, v: 0, v2: 1},
			{op: "set", key: k, v: 7},
			{op: "get", key: k, wantV: 7, wantOK: true},
			{op: "len", wantSize: 1},
			{op: "set", key: k, v: 0, wantV: 7, wantOK: true},
			{op: "get", key: k, wantV: 0, wantOK: true},
			{op: "cas", key: k, v: 1, v2: 2},
			{op: "cas", key: k, v: 0, v2: 2, wantOK: true},
			{op: "get", key: k, wantV: 2, wantOK: true},
			{op: "car", key: k, v: 3},
			{op: "get", key: k, wantV: 2, wantOK: true},
			{op: "car", key: k, v: 2, wantOK: true},
			{op: "get", key: k},
			{op: "len", wantSize: 0},
			{op: "set", key: k, v: ^uint64(0)},
			{op: "remove", key: k, wantV: ^uint64(0), wantOK: true},
			{op: "remove", key: k},
			{op: "len", wantSize: 0},
		}
	}
	tests := map[string][]step{
		"hash 0":                 common("zero"),
		"hash max":               common("max"),
		"hash mixing to 0":       common("mixzero"),
		"hash with low bits set": common("lowA"),
		"low-bit collisions": {
			{op: "set", key: "lowA", v: 1},
			{op: "set", key: "lowB", v: 2},
			{op: "set", key: "lowC", v: 3},
			{op: "len", wantSize: 3},
			{op: "get", key: "lowB", wantV: 2, wantOK: true},
			{op: "remove", key: "lowA", wantV: 1, wantOK: true},
			{op: "get", key: "lowB", wantV: 2, wantOK: true},
			{op: "get", key: "lowC", wantV: 3, wantOK: true},
			{op: "cas", key: "lowC", v: 3, v2: 4, wantOK: true},
			{op: "car", key: "lowB", v: 2, wantOK: true},
			{op: "get", key: "lowC", wantV: 4, wantOK: true},
			{op: "get", key: "lowA"},
			{op: "len", wantSize: 1},
		},
		"zero and mixzero apart": {
			{op: "set", key: "zero", v: 10},
			{op: "set", key: "mixzero", v: 20},
			{op: "get", key: "zero", wantV: 10, wantOK: true},
			{op: "get", key: "mixzero", wantV: 20, wantOK: true},
			{op: "remove", key: "mixzero", wantV: 20, wantOK: true},
			{op: "get", key: "zero", wantV: 10, wantOK: true},
			{op: "len", wantSize: 1},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			ix := testIndex(t, 0)
			for i, st := range steps {
				if err := apply(ix, keys[st.key], st); err != nil {
					t.Fatalf("step %d %+v: %s", i, st, err)
				}
			}
		})
	}
}

func apply(ix *index, h uint64, st step) error {
	var v uint64
	var ok bool
	switch st.op {
	case "get":
		v, ok = ix.get(h)
	case "set":
		v, ok = ix.set(h, st.v)
	case "remove":
		v, ok = ix.remove(h)
	case "car":
		ok = ix.compareAndRemove(h, st.v)
	case "cas":
		ok = ix.compareAndSwap(h, st.v, st.v2)
	case "len":
		if n := ix.len(); n != st.wantSize {
			return fmt.Errorf("len = %d", n)
		}
		return nil
	default:
		return fmt.Errorf("unknown op %q", st.op)
	}
	if v != st.wantV || ok != st.wantOK {
		return fmt.Errorf("got %d, %v", v, ok)
	}
	return ix.checkConsistency()
}

// TestIndexProbing drives long probe runs: keys sharing a home slot, in
// the middle of a shard and at its last slot (wrapping to slot 0), through
// growth from the smallest table and backward-shift deletion.
func TestIndexProbing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix uint64
	}{
		{"middle", 0x8000_0000},
		{"last slot wraps", 0xffff_ffff},
		{"first slot", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := testIndex(t, 0)
			hs := collidingKeys(ix, 3, tc.prefix, 100)
			// Neighbours with nearby homes, so shifted runs meet others.
			hs = append(hs, collidingKeys(ix, 3, tc.prefix-1, 20)...)
			for i, h := range hs {
				if _, replaced := ix.set(h, uint64(i)); replaced {
					t.Fatalf("key %d: replaced on first set", i)
				}
			}
			if err := ix.checkConsistency(); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(hs); i += 2 {
				if v, ok := ix.remove(hs[i]); !ok || v != uint64(i) {
					t.Fatalf("remove %d = %d, %v", i, v, ok)
				}
				if err := ix.checkConsistency(); err != nil {
					t.Fatalf("after remove %d: %v", i, err)
				}
			}
			for i, h := range hs {
				v, ok := ix.get(h)
				if want := i%2 == 1; ok != want || ok && v != uint64(i) {
					t.Fatalf("get %d = %d, %v; want present=%v", i, v, ok, want)
				}
			}
			if got, want := ix.len(), len(hs)/2; got != want {
				t.Fatalf("len = %d, want %d", got, want)
			}
		})
	}
}

// TestIndexModel runs random operations on the index and on a plain map
// side by side and demands the same answers. Keys come from a small pool
// rich in collisions, so the same slots churn.
func TestIndexModel(t *testing.T) {
	ix := testIndex(t, 0)
	pool := []uint64{0, ^uint64(0), ix.mix.unmix(0)}
	pool = append(pool, collidingKeys(ix, 0, 0, 40)...)
	pool = append(pool, collidingKeys(ix, 5, 0xffff_ffff, 40)...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		pool = append(pool, rng.Uint64())
	}
	model := map[uint64]uint64{}
	for step := range 30000 {
		h := pool[rng.IntN(len(pool))]
		v := rng.Uint64N(4) // few values, so compare ops often match
		mv, mok := model[h]
		var gv uint64
		var gok, want bool
		switch op := rng.IntN(10); {
		case op < 3:
			gv, gok = ix.get(h)
		case op < 6:
			gv, gok = ix.set(h, v)
			model[h] = v
		case op < 7:
			gv, gok = ix.remove(h)
			delete(model, h)
		case op < 8:
			gok, want = ix.compareAndRemove(h, v), mok && mv == v
			mv, mok = 0, want
			if want {
				delete(model, h)
			}
		default:
			nv := rng.Uint64()
			gok, want = ix.compareAndSwap(h, v, nv), mok && mv == v
			mv, mok = 0, want
			if want {
				model[h] = nv
			}
		}
		if gv != mv || gok != mok {
			t.Fatalf("step %d key %#x: got %d, %v; model %d, %v", step, h, gv, gok, mv, mok)
		}
		if step%1000 == 0 {
			if err := ix.checkConsistency(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	checkContents(t, ix, model)
}

// checkContents demands that len and rangeShard agree with model.
func checkContents(t *testing.T, ix *index, model map[uint64]uint64) {
	t.Helper()
	if ix.len() != len(model) {
		t.Fatalf("len = %d, model has %d", ix.len(), len(model))
	}
	seen := map[uint64]bool{}
	for i := range ix.shardCount() {
		ix.rangeShard(i, func(h, v uint64) bool {
			if mv, ok := model[h]; !ok || mv != v || seen[h] {
				t.Errorf("range: %#x=%d; model %d, %v; seen %v", h, v, mv, ok, seen[h])
			}
			seen[h] = true
			return true
		})
	}
	if len(seen) != len(model) {
		t.Fatalf("range saw %d entries, model has %d", len(seen), len(model))
	}
}

func TestIndexRangeShardStops(t *testing.T) {
	ix := testIndex(t, 0)
	ix.set(ix.mix.unmix(0), 1) // the side field is visited first
	for _, h := range collidingKeys(ix, 0, 7, 10) {
		ix.set(h, 2)
	}
	for _, stopAfter := range []int{1, 2, 5, 11} {
		calls := 0
		ix.rangeShard(0, func(h, v uint64) bool {
			calls++
			return calls < stopAfter
		})
		if calls != stopAfter {
			t.Errorf("stop after %d: fn called %d times", stopAfter, calls)
		}
	}
}

func TestIndexShardCount(t *testing.T) {
	for _, tc := range []struct{ procs, want int }{
		{1, 64}, {16, 64}, {17, 128}, {100, 512}, {1 << 20, maxShards},
	} {
		if got := shardCountFor(tc.procs); got != tc.want {
			t.Errorf("shardCountFor(%d) = %d, want %d", tc.procs, got, tc.want)
		}
	}
	n := newIndex(0).shardCount()
	if n&(n-1) != 0 || n < 4*runtime.GOMAXPROCS(0) || n < minShards {
		t.Fatalf("shardCount = %d with GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
}

func TestIndexSlotsFor(t *testing.T) {
	for e := range 5000 {
		n := slotsFor(e)
		if int(n*loadNum/loadDen) < e || n < minSlots {
			t.Fatalf("slotsFor(%d) = %d holds only %d", e, n, n*loadNum/loadDen)
		}
		if e > 100 && int((n-2)*loadNum/loadDen) >= e {
			t.Fatalf("slotsFor(%d) = %d is not tight", e, n)
		}
	}
}

// TestIndexFootprint checks the issue's ≤ 24 bytes per entry from the
// index's own accounting, at many sizes without a hint (so right after
// growth too) and at the hinted size.
func TestIndexFootprint(t *testing.T) {
	const total = 300_000
	ix := testIndex(t, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= total; n++ {
		ix.set(rng.Uint64(), uint64(n))
		if n%20_000 == 0 {
			if per := float64(ix.footprint()) / float64(n); per > 24 {
				t.Errorf("no hint, %d entries: %.1f B/entry", n, per)
			}
		}
	}
	hinted := testIndex(t, total)
	before := hinted.footprint()
	for n := range total {
		hinted.set(rng.Uint64(), uint64(n))
	}
	if after := hinted.footprint(); after != before {
		t.Errorf("hint %d: footprint grew from %d to %d", total, before, after)
	}
	if per := float64(hinted.footprint()) / total; per > 24 {
		t.Errorf("hint %d: %.1f B/entry", total, per)
	}
}

func TestIndexAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ix := testIndex(t, 10_000)
	rng := rand.New(rand.NewPCG(5, 6))
	keys := make([]uint64, 5000)
	for i := range keys {
		keys[i] = rng.Uint64()
		ix.set(keys[i], 1)
	}
	i := 0
	next := func() uint64 { i++; return keys[i%len(keys)] }
	for name, f := range map[string]func(){
		"get":            func() { ix.get(next()) },
		"set overwrite":  func() { ix.set(next(), 2) },
		"set insert":     func() { ix.set(rng.Uint64(), 3) },
		"compareAndSwap": func() { ix.compareAndSwap(next(), 2, 2) },
		"remove+set":     func() { h := next(); ix.remove(h); ix.set(h, 1) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocs per run", name, n)
		}
	}
}

// TestIndexConcurrent runs writers on their own keys, CAS incrementers on
// one shared key, and readers ranging and counting, all at once; run it
// with -race.
func TestIndexConcurrent(t *testing.T) {
	const (
		workers = 4
		keysPer = 300
		rounds  = 3
		incs    = 500
	)
	ix := testIndex(t, 0)
	const shared = 0xabcdef
	ix.set(shared, 0)
	var wg sync.WaitGroup
	errs := make(chan string, 4*workers)
	for w := range workers {
		wg.Go(func() {
			base := uint64(w+1) << 56
			for r := range rounds {
				for k := range uint64(keysPer) {
					ix.set(base|k, uint64(r))
				}
				for k := range uint64(keysPer) {
					if v, ok := ix.get(base | k); !ok || v != uint64(r) {
						errs <- "own key lost"
						return
					}
					if k%3 == 0 && !ix.compareAndRemove(base|k, uint64(r)) {
						errs <- "compareAndRemove of own key failed"
						return
					}
				}
			}
		})
		wg.Go(func() {
			for range incs {
				for {
					v, _ := ix.get(shared)
					if ix.compareAndSwap(shared, v, v+1) {
						break
					}
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			for i := range ix.shardCount() {
				ix.rangeShard(i, func(h, v uint64) bool { return true })
			}
			_ = ix.len()
		}
	})
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if v, _ := ix.get(shared); v != workers*incs {
		t.Errorf("shared counter = %d, want %d", v, workers*incs)
	}
	if got, want := ix.len(), 1+workers*(keysPer-(keysPer+2)/3); got != want {
		t.Errorf("len = %d, want %d", got, want)
	}
}

package admission

import (
	"math/rand/v2"
	"sync"
	"testing"
)

func newFilter(t testing.TB, o FrequencyOptions) *FrequencyFilter {
	t.Helper()
	if o.Seed == 0 {
		o.Seed = 42
	}
	f, err := NewFrequencyFilter(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// keyHash spreads test keys like a real 64-bit hash would.
func keyHash(i int) uint64 { return mix(uint64(i) + 0x1234567) }

// TestFrequencyFilterAdmits: with the default MinFrequency 2, keys seen
// twice or more are admitted (count-min never underestimates) and keys
// seen once or never are almost all rejected.
func TestFrequencyFilterAdmits(t *testing.T) {
	tests := []struct {
		records      int
		wantAdmitted float64 // fraction of keys admitted, ±tolerance
		tolerance    float64
	}{
		{0, 0, 0.01},
		{1, 0, 0.02},
		{2, 1, 0},
		{3, 1, 0},
		{20, 1, 0},
	}
	const keys = 2000
	for _, tt := range tests {
		f := newFilter(t, FrequencyOptions{Keys: 1 << 14})
		admitted := 0
		for k := range keys {
			for range tt.records {
				f.Record(keyHash(k))
			}
		}
		for k := range keys {
			if f.Admit(keyHash(k), 1000) == Admitted {
				admitted++
			}
		}
		if got := float64(admitted) / keys; got < tt.wantAdmitted-tt.tolerance || got > tt.wantAdmitted+tt.tolerance {
			t.Errorf("keys recorded %d times: %.4f admitted, want %.2f ±%.2f", tt.records, got, tt.wantAdmitted, tt.tolerance)
		}
	}
}

func TestFrequencyFilterMinFrequency(t *testing.T) {
	for _, minFreq := range []int{1, 2, 5, 16} {
		f := newFilter(t, FrequencyOptions{MinFrequency: minFreq, Keys: 1 << 12, Shards: 1})
		h := keyHash(7)
		for i := range 20 {
			want := Rejected
			if i >= minFreq {
				want = Admitted
			}
			if got := f.Admit(h, 1); got != want {
				t.Fatalf("min %d, after %d records: Admit = %v, want %v", minFreq, i, got, want)
			}
			if got, want := f.Frequency(h), min(i, 16); got != want {
				t.Fatalf("min %d, after %d records: Frequency = %d, want %d", minFreq, i, got, want)
			}
			f.Record(h)
		}
	}
}

// TestFrequencyFilterHalving: after Window records the counters halve and
// the doorkeeper clears, so an old favourite falls below MinFrequency.
func TestFrequencyFilterHalving(t *testing.T) {
	const keys, window = 1 << 12, 1 << 12
	f := newFilter(t, FrequencyOptions{MinFrequency: 4, Keys: keys, Window: window, Shards: 1})
	hot := keyHash(-1)
	for range 7 {
		f.Record(hot)
	}
	if got := f.Frequency(hot); got != 7 {
		t.Fatalf("hot key recorded 7 times: Frequency = %d", got)
	}
	// Fill the window with one-hit wonders, stopping one short of it.
	for k := range window - 8 {
		f.Record(keyHash(k))
	}
	if got := f.Frequency(hot); got < 7 {
		t.Fatalf("one record before the window ends: Frequency = %d, want >= 7", got)
	}
	if f.Admit(hot, 1) != Admitted {
		t.Fatal("hot key not admitted before halving")
	}
	f.Record(keyHash(window)) // the window's last record: halve
	// Sketch 6 → 3, doorkeeper cleared: 3 < MinFrequency 4.
	if got := f.Frequency(hot); got != 3 {
		t.Fatalf("after halving: Frequency = %d, want 3", got)
	}
	if f.Admit(hot, 1) != Rejected {
		t.Fatal("after halving, a key now below MinFrequency is still admitted")
	}
	// Two more windows without the hot key: 3 → 1 → 0.
	for k := range 2 * window {
		f.Record(keyHash(window + 1 + k))
	}
	if got := f.Frequency(hot); got != 0 {
		t.Fatalf("after three halvings: Frequency = %d, want 0", got)
	}
	// Counters saturate at 15: 100 records estimate 16 with the doorkeeper.
	for range 100 {
		f.Record(hot)
	}
	if got := f.Frequency(hot); got != 16 {
		t.Fatalf("after 100 records: Frequency = %d, want 16 (15 + doorkeeper)", got)
	}
}

// TestFrequencyFilterFalsePositives: with the default proportions (window =
// 10 × keys), a full window of distinct keys seen once leaves few of them,
// and few never-seen keys, admitted.
func TestFrequencyFilterFalsePositives(t *testing.T) {
	const keys = 1 << 12
	for _, shards := range []int{1, 4} {
		f := newFilter(t, FrequencyOptions{Keys: keys, Shards: shards})
		window := 10 * keys
		// Stay clear of every shard's halving point.
		seen := window * 9 / 10
		for k := range seen {
			f.Record(keyHash(k))
		}
		var once, never, door int
		for k := range seen {
			if f.Admit(keyHash(k), 1) == Admitted {
				once++
			}
			if f.Admit(keyHash(-1-k), 1) == Admitted {
				never++
			}
			if h, s, _ := f.locate(keyHash(-1 - k)); s.inDoor(h) {
				door++
			}
		}
		fpOnce, fpNever, fpDoor := float64(once)/float64(seen), float64(never)/float64(seen), float64(door)/float64(seen)
		t.Logf("shards %d: admitted %.4f of keys seen once, %.4f of keys never seen; doorkeeper false positives %.4f",
			shards, fpOnce, fpNever, fpDoor)
		if fpOnce > 0.05 || fpNever > 0.05 || fpDoor > 0.08 {
			t.Errorf("shards %d: false positives %.4f (seen once), %.4f (never seen), want <= 0.05; doorkeeper %.4f, want <= 0.08",
				shards, fpOnce, fpNever, fpDoor)
		}
	}
}

// TestFrequencyFilterSeeds: the seed changes which keys collide.
func TestFrequencyFilterSeeds(t *testing.T) {
	a := newFilter(t, FrequencyOptions{Keys: 64, Seed: 1})
	b := newFilter(t, FrequencyOptions{Keys: 64, Seed: 2})
	ha, _, baseA := a.locate(1)
	hb, _, baseB := b.locate(1)
	if ha == hb && baseA == baseB {
		t.Fatal("two seeds map a key to the same hash")
	}
	r, err := NewFrequencyFilter(FrequencyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.seed == 0 {
		t.Fatal("Seed 0 did not draw a random seed")
	}
}

// TestFrequencyFilterConcurrent: Records and Admits from 8 goroutines, with
// halvings in between; run it with -race. A key every goroutine records
// stays admitted.
func TestFrequencyFilterConcurrent(t *testing.T) {
	f := newFilter(t, FrequencyOptions{Keys: 1 << 10, Window: 1 << 12, Shards: 4})
	hot := keyHash(-1)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 0))
			for i := range 5000 {
				f.Record(keyHash(rng.IntN(5000)))
				f.Admit(keyHash(rng.IntN(5000)), 1)
				if i%8 == 0 {
					f.Record(hot)
				}
			}
		})
	}
	wg.Wait()
	if f.Admit(hot, 1) != Admitted {
		t.Fatalf("hot key rejected, Frequency = %d", f.Frequency(hot))
	}
}

func TestFrequencyFilterAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	f := newFilter(t, FrequencyOptions{Keys: 1 << 10, Window: 1 << 10, Shards: 2})
	i := 0
	n := testing.AllocsPerRun(5000, func() { // crosses several halvings
		f.Record(keyHash(i % 300))
		f.Admit(keyHash(i), 1)
		f.Charge(10)
		i++
	})
	if n != 0 {
		t.Fatalf("Record+Admit+Charge allocate %v times per run", n)
	}
}

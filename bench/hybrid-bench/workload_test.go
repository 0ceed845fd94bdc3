package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

func testWorkload(min, max int64, writers int, dist string) *workload {
	cfg := &config{EntryMin: min, EntryMax: max, Writers: writers, GetRange: 100, Distribution: dist, ZipfS: 0.9}
	return newWorkload(nil, cfg)
}

func TestValueRoundTrip(t *testing.T) {
	w := testWorkload(1, 4096, 1, "uniform")
	for _, n := range []int{1, 7, 8, 9, 100, 4096} {
		for _, idx := range []uint64{0, 1, 12345, 1 << 60} {
			v := w.value(nil, idx, n)
			if len(v) != 8+n || !w.valid(v, idx) {
				t.Fatalf("value(%d, %d) invalid", idx, n)
			}
			if n >= 8 && w.valid(v, idx+1) {
				t.Fatalf("value(%d, %d) valid for key %d", idx, n, idx+1)
			}
			bad := append([]byte(nil), v...)
			bad[len(bad)-1] ^= 1
			if w.valid(bad, idx) {
				t.Fatalf("flipped byte accepted")
			}
			if w.valid(v[:len(v)-1], idx) || w.valid(v[:5], idx) {
				t.Fatalf("truncated value accepted")
			}
		}
	}
	long := w.value(nil, 3, 4096)
	long[0] = 0xff // claims a length over entry-size-max
	if w.valid(long, 3) {
		t.Fatal("oversized length accepted")
	}
}

func TestEntrySizeInRange(t *testing.T) {
	w := testWorkload(2048, 2050, 1, "uniform")
	rng := rand.New(rand.NewPCG(1, 1))
	seen := map[int]bool{}
	for range 1000 {
		n := w.entrySize(rng)
		if n < 2048 || n > 2050 {
			t.Fatalf("size %d", n)
		}
		seen[n] = true
	}
	if len(seen) != 3 {
		t.Fatalf("sizes seen %v, want all of 2048..2050", seen)
	}
}

func TestPick(t *testing.T) {
	for _, dist := range []string{"uniform", "zipf"} {
		t.Run(dist, func(t *testing.T) {
			w := testWorkload(1, 16, 4, dist) // window: 100/4 = 25 keys per writer
			rng := rand.New(rand.NewPCG(2, 2))
			if _, ok := w.pick(rng); ok {
				t.Fatal("picked a key before any insert")
			}
			w.counts[0].Store(100)
			w.counts[1].Store(3)
			w.counts[2].Store(1)
			newest := 0
			for range 4000 {
				idx, ok := w.pick(rng)
				if !ok {
					continue
				}
				wr, c := idx%4, idx/4
				switch {
				case wr == 3:
					t.Fatalf("picked %d from writer 3, which inserted nothing", idx)
				case c >= w.counts[wr].Load():
					t.Fatalf("picked %d, not inserted yet", idx)
				case wr == 0 && c < 75:
					t.Fatalf("picked %d, older than the last 25 of writer 0", idx)
				}
				if wr == 0 && c == 99 {
					newest++
				}
			}
			// Uniform: ~1/4 × 1/25 of 4000 = 40 picks of the newest key;
			// Zipf s=0.9 over 25 ranks gives rank 0 about 20%: ~200.
			if dist == "zipf" && newest < 120 || dist == "uniform" && (newest < 15 || newest > 80) {
				t.Fatalf("newest key of writer 0 picked %d times", newest)
			}
		})
	}
}

func TestZipfCDF(t *testing.T) {
	cdf := zipfCDF(3, 1)
	// weights 1, 1/2, 1/3; sum 11/6
	want := []float64{6.0 / 11, 9.0 / 11, 1}
	for i := range want {
		if d := cdf[i] - want[i]; d > 1e-12 || d < -1e-12 {
			t.Fatalf("cdf %v, want %v", cdf, want)
		}
	}
}

func TestPacer(t *testing.T) {
	p := pacer{rate: 1 << 20} // 1 MiB/s
	if d := p.wait(0); d != 0 {
		t.Fatalf("first wait %v", d)
	}
	p.spend(512 << 10)
	if d := p.wait(100 * time.Millisecond); d != 400*time.Millisecond {
		t.Fatalf("after 512 KiB at 100ms: wait %v, want 400ms", d)
	}
	// A long stall forgives all but one second of backlog.
	if d := p.wait(10 * time.Second); d != -time.Second {
		t.Fatalf("after a stall: %v", d)
	}
	unlimited := pacer{}
	unlimited.spend(1 << 30)
	if d := unlimited.wait(0); d != 0 {
		t.Fatalf("unlimited pacer waits %v", d)
	}
}

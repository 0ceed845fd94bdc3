package admission

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

func newLimiter(t testing.TB, rate, burst int64) (*RateLimiter, *ManualClock) {
	t.Helper()
	clk := &ManualClock{}
	clk.Advance(time.Hour) // an arbitrary origin
	l, err := NewRateLimiter(RateOptions{BytesPerSecond: rate, BurstBytes: burst, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return l, clk
}

// offer simulates traffic on a ManualClock: entries of size(rng) bytes
// offered at offeredRate bytes/s for d, each admitted entry charged
// charge(size) bytes at once. It returns the bytes charged in each second.
func offer(l *RateLimiter, clk *ManualClock, rng *rand.Rand, offeredRate int64, d time.Duration,
	size func(*rand.Rand) int, charge func(int) int) []int64 {
	perSecond := make([]int64, (d+time.Second-1)/time.Second)
	start := clk.Nanotime()
	var offered int64
	for {
		elapsed := clk.Nanotime() - start
		if elapsed >= int64(d) {
			return perSecond
		}
		n := size(rng)
		if l.Admit(rng.Uint64(), n) == Admitted {
			c := charge(n)
			l.Charge(c)
			perSecond[elapsed/int64(time.Second)] += int64(c)
		}
		offered += int64(n)
		// Move the clock to when the next entry is due at offeredRate.
		due := time.Duration(float64(offered) / float64(offeredRate) * float64(time.Second))
		clk.Advance(due - time.Duration(elapsed))
	}
}

func fixed(n int) func(*rand.Rand) int { return func(*rand.Rand) int { return n } }
func uniform(lo, hi int) func(*rand.Rand) int {
	return func(r *rand.Rand) int { return lo + r.IntN(hi-lo) }
}
func exact(n int) int     { return n }
func aligned4k(n int) int { return (n + 4095) &^ 4095 }

// TestRateLimiterSimulated offers 4× the limit for 5 s of simulated time
// (after a second that drains the burst) and checks the bytes charged stay
// within ±5% of limit × 5 s. It runs in milliseconds.
func TestRateLimiterSimulated(t *testing.T) {
	tests := []struct {
		name   string
		rate   int64
		size   func(*rand.Rand) int
		charge func(int) int
	}{
		{"4KiB entries", 10 * mib, fixed(4 * kib), exact},
		{"64KiB entries", 10 * mib, fixed(64 * kib), exact},
		{"1MiB entries", 50 * mib, fixed(mib), exact},
		{"mixed sizes aligned charge", 20 * mib, uniform(100, 256*kib), aligned4k},
		{"small entries fast rate", 64 * mib, uniform(1, 32*kib), exact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, clk := newLimiter(t, tt.rate, 0)
			rng := rand.New(rand.NewPCG(1, 2))
			perSecond := offer(l, clk, rng, 4*tt.rate, 6*time.Second, tt.size, tt.charge)
			// Second 0 holds the burst (one second's worth) plus the rate.
			if lo, hi := 1.9*float64(tt.rate), 2.1*float64(tt.rate); float64(perSecond[0]) < lo || float64(perSecond[0]) > hi {
				t.Errorf("first second: %d bytes, want burst+rate ≈ %d", perSecond[0], 2*tt.rate)
			}
			var steady int64
			for _, b := range perSecond[1:] {
				steady += b
			}
			want := 5 * float64(tt.rate)
			if r := float64(steady) / want; r < 0.95 || r > 1.05 {
				t.Errorf("5 s at 4× offered: %d bytes, want %0.f ±5%% (ratio %.4f)", steady, want, r)
			}
		})
	}
}

// TestRateLimiterDelayedCharge models flushers: admitted bytes are charged
// in batches every 10 ms, so more is admitted than charged in between. The
// long-run rate must hold, and the overshoot stays within one batch.
func TestRateLimiterDelayedCharge(t *testing.T) {
	const rate = 10 * mib
	l, clk := newLimiter(t, rate, rate/10)
	rng := rand.New(rand.NewPCG(3, 4))
	var pending, charged int64
	lastFlush := clk.Nanotime()
	start := lastFlush
	for clk.Nanotime()-start < int64(5*time.Second) {
		if n := 16 * kib; l.Admit(rng.Uint64(), n) == Admitted {
			pending += int64(n)
		}
		clk.Advance(time.Duration(16 * kib * int64(time.Second) / (4 * rate)))
		if clk.Nanotime()-lastFlush >= int64(10*time.Millisecond) {
			l.Charge(int(pending))
			charged, pending = charged+pending, 0
			lastFlush = clk.Nanotime()
		}
	}
	want := float64(rate)*5 + rate/10
	if r := float64(charged) / want; r < 0.95 || r > 1.05 {
		t.Errorf("charged %d bytes, want %.0f ±5%% (ratio %.4f)", charged, want, r)
	}
	if got := l.Charged(); got != uint64(charged) {
		t.Errorf("Charged() = %d, want %d", got, charged)
	}
}

// TestRateLimiterProperty: over any stretch [t_i, t_j] between two
// admissions, the bytes charged for admissions i..j-1 are below burst +
// rate × (t_j - t_i): the token-bucket bound, with only the last admitted
// entry allowed past it. And a bucket left alone long enough admits again.
func TestRateLimiterProperty(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 99))
		rate := int64(1+rng.IntN(1<<10)) * kib
		burst := 1 + rng.Int64N(3*rate)
		l, clk := newLimiter(t, rate, burst)
		type adm struct{ at, bytes int64 }
		var log []adm
		for range 400 {
			// Mostly short steps, sometimes long idle spells.
			step := rng.Int64N(int64(time.Millisecond))
			if rng.IntN(20) == 0 {
				step = rng.Int64N(int64(2 * time.Second))
			}
			clk.Advance(time.Duration(step))
			n := 1 + rng.IntN(int(min(rate, 1*mib)))
			if l.Admit(0, n) == Admitted {
				l.Charge(n)
				log = append(log, adm{clk.Nanotime(), int64(n)})
			}
		}
		for i := range log {
			var sum int64
			for j := i + 1; j < len(log); j++ {
				sum += log[j-1].bytes
				bound := float64(burst) + float64(rate)*float64(log[j].at-log[i].at)/1e9
				if float64(sum) >= bound+1 {
					t.Fatalf("seed %d: admissions %d..%d charged %d bytes in %v, bound %.0f (rate %d, burst %d)",
						seed, i, j-1, sum, time.Duration(log[j].at-log[i].at), bound, rate, burst)
				}
			}
		}
		clk.Advance(time.Duration((float64(burst)/float64(rate) + float64(mib)/float64(rate)) * 1e9))
		clk.Advance(time.Millisecond)
		if d := l.Admit(0, 1); d != Admitted {
			t.Fatalf("seed %d: after an idle refill Admit = %v", seed, d)
		}
		if got := l.Tokens(); got != burst {
			t.Fatalf("seed %d: after an idle refill Tokens() = %d, want burst %d", seed, got, burst)
		}
	}
}

func TestRateLimiterBasics(t *testing.T) {
	l, clk := newLimiter(t, 1000, 500)
	if got := l.Tokens(); got != 500 {
		t.Fatalf("new limiter holds %d tokens, want the burst 500", got)
	}
	for _, n := range []int{0, -5} {
		l.Charge(n)
	}
	if got := l.Tokens(); got != 500 {
		t.Fatalf("Charge(<=0) changed tokens to %d", got)
	}
	l.Charge(499)
	if d := l.Admit(1, 1<<30); d != Admitted {
		t.Fatalf("1 token left: Admit = %v, want admitted whatever the size", d)
	}
	l.Charge(1)
	if d := l.Admit(1, 1); d != Throttled {
		t.Fatalf("0 tokens: Admit = %v, want throttled", d)
	}
	l.Charge(1500) // overdraw: -1500 tokens, 1.5 s to repay
	clk.Advance(1500 * time.Millisecond)
	if d := l.Admit(1, 1); d != Throttled {
		t.Fatalf("tokens back to 0: Admit = %v, want throttled", d)
	}
	clk.Advance(time.Millisecond)
	if d := l.Admit(1, 1); d != Admitted {
		t.Fatalf("1 token: Admit = %v, want admitted", d)
	}
	if got := l.Tokens(); got != 1 {
		t.Fatalf("Tokens() = %d, want 1", got)
	}
	clk.Advance(time.Hour)
	if got := l.Tokens(); got != 500 {
		t.Fatalf("after an hour Tokens() = %d, want capped at burst 500", got)
	}
	if got := l.Charged(); got != 2000 {
		t.Fatalf("Charged() = %d, want 2000", got)
	}
}

// TestRateLimiterHugeCharge: absurd charges saturate instead of wrapping
// around to a full bucket.
func TestRateLimiterHugeCharge(t *testing.T) {
	l, clk := newLimiter(t, 1, 1)
	for range 10 {
		l.Charge(1 << 62)
	}
	clk.Advance(time.Hour)
	if d := l.Admit(0, 1); d != Throttled {
		t.Fatalf("after 10 × 2^62 bytes at 1 B/s: Admit = %v", d)
	}
}

// TestRateLimiterConcurrent hammers Admit and Charge from 8 goroutines
// that also move the clock; run it with -race. The bytes charged stay
// within burst + rate × t + one entry per goroutine, and above 90% of
// rate × t (the offer is far above the rate).
func TestRateLimiterConcurrent(t *testing.T) {
	const (
		rate    = 1 * mib
		burst   = rate / 4
		workers = 8
		size    = 4 * kib
		ops     = 20000
		step    = 50 * time.Microsecond // every 16 ops of each worker
	)
	l, clk := newLimiter(t, rate, burst)
	start := clk.Nanotime()
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for i := range uint64(ops) {
				if i%16 == 0 {
					clk.Advance(step)
				}
				if l.Admit(i*workers+uint64(w), size) == Admitted {
					l.Charge(size)
					admitted.Add(size)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Duration(clk.Nanotime() - start).Seconds()
	lo, hi := 0.9*rate*elapsed, burst+rate*elapsed+workers*size
	if got := float64(admitted.Load()); got < lo || got > hi {
		t.Fatalf("admitted %.0f bytes in %.2f s, want in [%.0f, %.0f]", got, elapsed, lo, hi)
	}
	if l.Charged() != uint64(admitted.Load()) {
		t.Fatalf("Charged() = %d, admitted %d", l.Charged(), admitted.Load())
	}
}

// TestRateLimiterRealClock offers 4× the limit for about a second of wall
// time on the real clock; the bound is looser than the simulated tests'
// because the scheduler decides when offers happen. The burst is the
// default second, so that a loaded machine (a tick that comes 100 ms late)
// loses no refill: what is measured is the limiter, not the scheduler.
func TestRateLimiterRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("real clock: one second of wall time")
	}
	const (
		rate = 8 * mib
		size = 16 * kib
	)
	l, err := NewRateLimiter(RateOptions{BytesPerSecond: rate})
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	var offered, admitted int64
	for elapsed := time.Duration(0); elapsed < time.Second; elapsed = time.Since(start) {
		<-tick.C
		for offered < int64(4*rate*time.Since(start).Seconds()) {
			if l.Admit(0, size) == Admitted {
				l.Charge(size)
				admitted += size
			}
			offered += size
		}
	}
	want := rate*time.Since(start).Seconds() + rate // + the burst
	if r := float64(admitted) / want; r < 0.85 || r > 1.15 {
		t.Fatalf("admitted %d bytes of %d offered, want %.0f ±15%% (ratio %.3f)", admitted, offered, want, r)
	}
}

func TestRateLimiterAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	l, clk := newLimiter(t, 1000, 1000)
	n := testing.AllocsPerRun(1000, func() {
		l.Admit(1, 100)
		l.Charge(100)
		l.Record(1)
		clk.Advance(time.Millisecond)
	})
	if n != 0 {
		t.Fatalf("Admit+Charge+Record allocate %v times per run", n)
	}
}

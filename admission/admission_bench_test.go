package admission

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// goroutines is the number of goroutines the parallel benchmarks run,
// whatever GOMAXPROCS is.
const goroutines = 8

// parallel runs body on goroutines goroutines: b.SetParallelism multiplies
// GOMAXPROCS.
func parallel(b *testing.B, body func(pb *testing.PB)) {
	b.ReportAllocs()
	b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(body)
}

// limiterIn returns a limiter in the given regime: "admitting" (tokens
// remain: the two-load fast path), "throttled" (overdrawn for hours: every
// Admit reads the MonotonicClock) or "throttled-coarse" (the same on a
// CoarseClock, closed when the benchmark ends).
func limiterIn(b *testing.B, regime string) *RateLimiter {
	o := RateOptions{BytesPerSecond: 1 * mib}
	if regime == "throttled-coarse" {
		c := NewCoarseClock(time.Millisecond)
		b.Cleanup(func() { c.Close(context.Background()) })
		o.Clock = c
	}
	l, err := NewRateLimiter(o)
	if err != nil {
		b.Fatal(err)
	}
	if regime != "admitting" {
		l.Charge(1 << 40)
	}
	return l
}

func BenchmarkRateLimiterAdmit(b *testing.B) {
	for _, regime := range []string{"admitting", "throttled", "throttled-coarse"} {
		b.Run(regime+"/serial", func(b *testing.B) {
			l := limiterIn(b, regime)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				l.Admit(uint64(i), 4096)
			}
		})
		b.Run(regime+"/parallel8", func(b *testing.B) {
			l := limiterIn(b, regime)
			parallel(b, func(pb *testing.PB) {
				for i := uint64(0); pb.Next(); i++ {
					l.Admit(i, 4096)
				}
			})
		})
	}
}

// BenchmarkRateLimiterAdmitCharge: every admitted entry is charged at
// once, at a rate that keeps the bucket at its edge (both paths mixed, and
// CAS contention in Charge).
func BenchmarkRateLimiterAdmitCharge(b *testing.B) {
	l, err := NewRateLimiter(RateOptions{BytesPerSecond: 256 * mib, BurstBytes: mib})
	if err != nil {
		b.Fatal(err)
	}
	parallel(b, func(pb *testing.PB) {
		for i := uint64(0); pb.Next(); i++ {
			if l.Admit(i, 4096) == Admitted {
				l.Charge(4096)
			}
		}
	})
}

// zipfKeys returns n key hashes drawn from a Zipf distribution over 1M
// keys (s = 1.01), the skew of web traffic.
func zipfKeys(n int) []uint64 {
	rng := rand.New(rand.NewPCG(1, 1))
	z := rand.NewZipf(rng, 1.01, 1, 1<<20)
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = keyHash(int(z.Uint64()))
	}
	return keys
}

func BenchmarkFrequencyFilter(b *testing.B) {
	keys := zipfKeys(1 << 16)
	mask := uint64(len(keys) - 1)
	newF := func(b *testing.B) *FrequencyFilter {
		f, err := NewFrequencyFilter(FrequencyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keys { // warm: counters set, halvings under way
			f.Record(k)
		}
		return f
	}
	b.Run("RecordAdmit/serial", func(b *testing.B) {
		f := newF(b)
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			k := keys[i&mask]
			f.Record(k)
			f.Admit(k, 4096)
		}
	})
	b.Run("RecordAdmit/parallel8", func(b *testing.B) {
		f := newF(b)
		parallel(b, func(pb *testing.PB) {
			i := rand.Uint64()
			for ; pb.Next(); i++ {
				k := keys[i&mask]
				f.Record(k)
				f.Admit(k, 4096)
			}
		})
	})
	b.Run("Admit/parallel8", func(b *testing.B) {
		f := newF(b)
		parallel(b, func(pb *testing.PB) {
			i := rand.Uint64()
			for ; pb.Next(); i++ {
				f.Admit(keys[i&mask], 4096)
			}
		})
	})
}

// BenchmarkChain is New(Options{}) on the real clock: the default
// controller as hybrid will call it (a Record per access, an Admit per
// eviction, here one each).
func BenchmarkChain(b *testing.B) {
	keys := zipfKeys(1 << 16)
	mask := uint64(len(keys) - 1)
	c, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	parallel(b, func(pb *testing.PB) {
		i := rand.Uint64()
		for ; pb.Next(); i++ {
			k := keys[i&mask]
			c.Record(k)
			if c.Admit(k, 4096) == Admitted {
				c.Charge(4096)
			}
		}
	})
}

// BenchmarkClock: what the limiter's slow path pays for the time.
func BenchmarkClock(b *testing.B) {
	b.Run("MonotonicClock", func(b *testing.B) {
		c := MonotonicClock()
		for b.Loop() {
			c.Nanotime()
		}
	})
	b.Run("CoarseClock", func(b *testing.B) {
		c := NewCoarseClock(time.Millisecond)
		defer c.Close(context.Background())
		for b.Loop() {
			c.Nanotime()
		}
	})
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			_ = time.Now()
		}
	})
}

// BenchmarkFillerAdmitTo is the Filler's throttled path, where it asks the
// device and its endurance bucket: "fill" (the device fills: a Fill, which
// also caps the rate's debt with a CAS), "full" (the device has no room:
// Throttled after one Filling call), both on a CoarseClock as in the
// binary.
func BenchmarkFillerAdmitTo(b *testing.B) {
	for _, regime := range []string{"fill", "full"} {
		b.Run(regime, func(b *testing.B) {
			c := NewCoarseClock(time.Millisecond)
			b.Cleanup(func() { c.Close(context.Background()) })
			f, err := NewFiller(RateOptions{BytesPerSecond: mib, Clock: c}, FillOptions{DeviceBytes: 1 << 50})
			if err != nil {
				b.Fatal(err)
			}
			f.Charge(1 << 40) // the rate overdrawn for hours
			dev := filling(regime == "fill")
			want := map[string]Decision{"fill": Fill, "full": Throttled}[regime]
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if d := f.AdmitTo(&dev, uint64(i), 4096); d != want {
					b.Fatalf("%v, want %v", d, want)
				}
			}
		})
	}
}

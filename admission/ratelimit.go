package admission

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// RateLimiter is a token bucket in bytes: it refills at Rate bytes per
// second up to Burst bytes, admits while it holds any token, and is debited
// by Charge with the bytes really written, after the fact.
//
// Algorithm. The bucket is kept as one instant rather than a token count:
// empty is the clock reading at which the bucket is (or was) empty, so the
// tokens at time now are min(Burst, (now-empty) × Rate). Admit is then
// "now > empty". Charge(n) moves empty to max(empty, now-burstNanos) +
// n/Rate with a CAS loop: the max applies the Burst cap, the addition the
// debit. One int64 holds the whole state, so there is nothing to keep
// consistent between two words and no lock.
//
// Clock reads. Admit also keeps seen, the latest clock reading that was
// past empty. Because readings only grow, seen > empty proves tokens remain
// without reading the clock: while the bucket holds tokens Admit is two
// atomic loads. Only when the bucket may be empty does Admit read the
// Clock (and it writes seen only when that reading admits): about 45 ns with
// MonotonicClock, one more atomic load with a CoarseClock, which is what an
// owner expecting long throttled spells should pass. Charge reads the Clock
// once per call; flushers call it per device write, not per entry.
//
// Accuracy. Admission is optimistic, as the hybrid design wants: an entry
// is admitted while tokens > 0 whatever its size, and its bytes are charged
// only once written. Over any interval of d seconds the bytes charged are
// at most Burst + Rate×d plus what was admitted but not yet charged when the
// bucket ran dry (at most one entry per concurrent caller if Charge follows
// Admit at once; the flusher queue's byte limit in hybrid). Time is kept in
// whole nanoseconds, rounded so that it errs on admitting less: at most
// 1 ns of refill per Charge.
//
// Concurrency. All methods are safe for concurrent use; Admit neither
// blocks nor allocates. The limiter starts no goroutine and needs no Close.
type RateLimiter struct {
	_          [64]byte // keep the hot words off a neighbour's cache line
	empty      atomic.Int64
	seen       atomic.Int64
	_          [48]byte
	clock      Clock
	nsPerByte  float64
	burstNanos int64
	rate       int64
	burst      int64
	charged    atomic.Uint64
}

var _ Controller = (*RateLimiter)(nil)

// NewRateLimiter returns a limiter with a full bucket. It applies
// EnsureDefaults to a copy of o, then Validate.
func NewRateLimiter(o RateOptions) (*RateLimiter, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return newBucket(o.Clock, float64(time.Second)/float64(o.BytesPerSecond), o.BytesPerSecond, o.BurstBytes), nil
}

// newBucket returns a full bucket refilling one byte every nsPerByte
// nanoseconds up to burst bytes; rate is only reported by String. It does
// not validate: the Filler's endurance budget refills over a day, past
// what RateOptions allows.
func newBucket(clock Clock, nsPerByte float64, rate, burst int64) *RateLimiter {
	l := &RateLimiter{clock: clock, nsPerByte: nsPerByte, rate: rate, burst: burst}
	// Rounded down, so rounding never admits more.
	l.burstNanos = max(1, int64(min(float64(burst)*l.nsPerByte, maxNanos)))
	now := l.clock.Nanotime()
	l.empty.Store(now - l.burstNanos)
	l.seen.Store(now)
	return l
}

// capDebt forgives what Charge overdrew beyond maxDebt nanoseconds of
// refill, so that the bucket is admitting again at most maxDebt from now.
func (l *RateLimiter) capDebt(maxDebt int64) {
	ceil := l.clock.Nanotime() + maxDebt
	for {
		old := l.empty.Load()
		if old <= ceil || l.empty.CompareAndSwap(old, ceil) {
			return
		}
	}
}

// nanosFor returns how long the bucket takes to refill n bytes, rounded
// up (so rounding never admits more) and capped far below overflow.
func (l *RateLimiter) nanosFor(n int64) int64 {
	d := math.Ceil(float64(n) * l.nsPerByte)
	if d >= maxNanos {
		return maxNanos
	}
	return int64(d)
}

// maxNanos caps one Charge's debit (about 73 years), so sums cannot overflow.
const maxNanos = math.MaxInt64 / 4

// Admit implements Controller: Admitted while the bucket holds tokens,
// Throttled otherwise. hash and size are not used.
func (l *RateLimiter) Admit(uint64, int) Decision {
	e := l.empty.Load()
	if l.seen.Load() > e {
		return Admitted
	}
	now := l.clock.Nanotime()
	if now > e {
		l.seen.Store(now)
		return Admitted
	}
	return Throttled
}

// Record implements Controller; the limiter does not learn from accesses.
func (l *RateLimiter) Record(uint64) {}

// Charge implements Controller: it debits n bytes written to the device.
func (l *RateLimiter) Charge(n int) {
	if n <= 0 {
		return
	}
	l.charged.Add(uint64(n))
	cost := l.nanosFor(int64(n))
	now := l.clock.Nanotime()
	floor := now - l.burstNanos
	for {
		old := l.empty.Load()
		next := max(old, floor)
		if next > math.MaxInt64-cost {
			next = math.MaxInt64
		} else {
			next += cost
		}
		if l.empty.CompareAndSwap(old, next) {
			return
		}
	}
}

// Tokens returns the bytes the bucket holds now: at most Burst, negative
// when Charge has overdrawn it (a gauge for metrics).
func (l *RateLimiter) Tokens() int64 {
	d := l.clock.Nanotime() - l.empty.Load()
	if d >= l.burstNanos {
		return l.burst
	}
	return int64(float64(d) / l.nsPerByte)
}

// Charged returns the total bytes passed to Charge (a counter for metrics).
func (l *RateLimiter) Charged() uint64 { return l.charged.Load() }

// String describes the limiter's configuration.
func (l *RateLimiter) String() string {
	return fmt.Sprintf("admission: rate limiter %d B/s, burst %d B", l.rate, l.burst)
}

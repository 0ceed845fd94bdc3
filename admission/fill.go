package admission

import (
	"fmt"
	"time"
)

// Device is the disk an entry would be written to, as a work-conserving
// controller sees it. hybrid's disk engine implements it.
type Device interface {
	// Filling reports whether the device can take a write now without
	// costing live data or reads: it has never-written (or freed) space
	// beyond what its reclaimers keep ready and what is already queued, its
	// write queue is not building up, and no read waits for the device.
	// It must be cheap (a few atomic loads) and never block.
	Filling() bool
}

// DeviceController is a Controller that can weigh the state of the device
// an entry is bound for. hybrid calls AdmitTo instead of Admit on a
// Controller that implements it; Chain's result does, and so does Filler.
type DeviceController interface {
	Controller
	// AdmitTo is Admit for an entry bound for dev. dev may be nil: then
	// it answers as Admit.
	AdmitTo(dev Device, hash uint64, size int) Decision
}

// admitTo asks c with dev if c is a DeviceController.
func admitTo(c Controller, dev Device, hash uint64, size int) Decision {
	if dc, ok := c.(DeviceController); ok {
		return dc.AdmitTo(dev, hash, size)
	}
	return c.Admit(hash, size)
}

// Filler is work-conserving write admission: a RateLimiter for the steady
// state, which a device filling its free space may pass, under a daily
// endurance budget.
//
// Why. The per-second rate protects flash endurance and read bandwidth
// once the device is full and every write overwrites live data. On a
// fresh device (or one recovered half empty) there is nothing to
// overwrite and little to read: refusing writes there only leaves a cold
// cache cold for longer. A 2 GiB working set behind a 256 MiB memory tier
// took three passes to reach a 4 GiB disk at 64 MiB/s.
//
// Algorithm. AdmitTo asks the rate bucket first: Admitted while it holds
// tokens, exactly as the RateLimiter alone. When the bucket is empty and
// dev.Filling() (the device can take the write at device speed, see
// Device), it asks the endurance bucket: Fill while that holds tokens,
// OverBudget when not; without room on the device it is Throttled. So the
// fill runs as fast as the flushers write, no faster (Filling turns false
// as soon as the write queue builds up), and stops when the device is full.
//
// The endurance bucket is a token bucket of BytesPerDay refilled over a
// day, at most a day's worth, starting full, charged with every byte
// written (rate-admitted ones too); its debt is capped at one day, so a
// steady state writing more than the budget (the rate allows 64 MiB/s,
// far more than a drive write a day) never postpones a later fill by more
// than a day. The rate bucket's debt is capped at one burst on every Fill:
// the fill's bytes do not hold the steady state back once the device is
// full, beyond one burst's refill time.
//
// Admit (no device) and Record answer as the RateLimiter; Charge charges
// both buckets. Safe for concurrent use, lock-free, allocation-free.
type Filler struct {
	rate     *RateLimiter
	day      *RateLimiter
	perDay   int64
	dayNanos int64
}

var _ DeviceController = (*Filler)(nil)

// NewFiller returns a Filler with full buckets. It applies EnsureDefaults
// to copies of rate and fill, then Validate; fill.DeviceBytes must be > 0.
func NewFiller(rate RateOptions, fill FillOptions) (*Filler, error) {
	rl, err := NewRateLimiter(rate)
	if err != nil {
		return nil, err
	}
	fill.EnsureDefaults()
	if err := fill.Validate(); err != nil {
		return nil, err
	}
	perDay := fill.BytesPerDay()
	if perDay <= 0 {
		return nil, fmt.Errorf("%w: fill.device_bytes %d leaves no daily budget", ErrInvalidOptions, fill.DeviceBytes)
	}
	day := newBucket(rl.clock, float64(24*time.Hour)/float64(perDay), perDay/86400, perDay)
	return &Filler{rate: rl, day: day, perDay: perDay, dayNanos: day.burstNanos}, nil
}

// Admit implements Controller: the rate limiter's answer.
func (f *Filler) Admit(hash uint64, size int) Decision { return f.rate.Admit(hash, size) }

// AdmitTo implements DeviceController.
func (f *Filler) AdmitTo(dev Device, hash uint64, size int) Decision {
	if d := f.rate.Admit(hash, size); d == Admitted || dev == nil {
		return d
	}
	if !dev.Filling() {
		return Throttled
	}
	if f.day.Admit(hash, size) != Admitted {
		return OverBudget
	}
	f.rate.capDebt(f.rate.burstNanos)
	return Fill
}

// Record implements Controller; the Filler does not learn from accesses.
func (f *Filler) Record(uint64) {}

// Charge implements Controller: both buckets pay for n bytes written.
func (f *Filler) Charge(n int) {
	if n <= 0 {
		return
	}
	f.rate.Charge(n)
	f.day.Charge(n)
	f.day.capDebt(f.dayNanos)
}

// Budget returns the bytes left in today's endurance budget: at most
// BytesPerDay, negative when the writes of the last day exceeded it.
func (f *Filler) Budget() int64 { return f.day.Tokens() }

// Rate returns the steady-state RateLimiter (for its gauges).
func (f *Filler) Rate() *RateLimiter { return f.rate }

// String describes the Filler's configuration.
func (f *Filler) String() string {
	return fmt.Sprintf("admission: filler: rate %d B/s, burst %d B; endurance %d B/day", f.rate.rate, f.rate.burst, f.perDay)
}

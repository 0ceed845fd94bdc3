package admission

import (
	"fmt"
	"time"
)

// Device is the disk an entry would be written to, as a work-conserving
// controller sees it. hybrid's disk engine implements it.
type Device interface {
	// Filling reports whether the device can take a write now at device
	// speed without costing reads: it has room (never-written space beyond
	// what its reclaimers keep ready and what is queued, or, once full,
	// reclaimers that keep up), its write queue is not building up, and no
	// read waits for the device. It must be cheap (a few atomic loads) and
	// never block.
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
// state, which a device with write bandwidth to spare may pass, under an
// endurance budget of drive writes per day.
//
// Why. The per-second rate protects read bandwidth and flash endurance
// when the device is busy. A device with bandwidth to spare (a fresh one,
// or a full one whose reclaimers keep up, while no read waits) loses
// nothing by taking the write; refusing it only leaves the cache colder,
// where nginx, Varnish and Traffic Server write every object. A 2 GiB
// working set behind a 256 MiB memory tier took three passes to reach a
// fresh 4 GiB disk at 64 MiB/s; on a full one a fifth of it never did.
//
// Algorithm. AdmitTo asks the rate bucket first: Admitted while it holds
// tokens, exactly as the RateLimiter alone. When the bucket is empty and
// dev.Filling() (the device can take the write at device speed, see
// Device), it asks the endurance bucket: Fill while that holds tokens,
// OverBudget when not; without room on the device it is Throttled. So the
// fill runs as fast as the flushers write, no faster (Filling turns false
// as soon as the write queue builds up or a read waits).
//
// The endurance bucket is a token bucket refilled with BytesPerDay a
// day, holding at most enduranceDays days' worth, starting with one
// day's plus one fill of the device (startBudget), charged with every byte written (rate-admitted ones too); its
// debt is capped at one day, so a steady state writing more than the budget (the rate
// allows 64 MiB/s, far more than a drive write a day) never postpones a
// later fill by more than a day. The rate bucket's debt is capped at one burst on every Fill:
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

// NewFiller returns a Filler with a full rate bucket and an endurance
// bucket holding startBudget. It applies EnsureDefaults
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
	day := newBucket(rl.clock, float64(24*time.Hour)/float64(perDay), perDay/86400, perDay*enduranceDays)
	start := startBudget(perDay, fill.DeviceBytes)
	day.empty.Store(day.clock.Nanotime() - int64(float64(start)*day.nsPerByte))
	return &Filler{rate: rl, day: day, perDay: perDay, dayNanos: int64(24 * time.Hour)}, nil
}

// enduranceDays is how many days of budget the endurance bucket holds.
// Flash endurance is rated in drive writes per day averaged over years of
// warranty, not per calendar day: a week's worth keeps writes to the
// rating over any week, yet lets a node that wrote little for days
// re-warm a full device in one go when the working set moves (a 2 GiB set
// written to a 4 GiB disk whose day's budget earlier sets had mostly
// spent was a fifth refused, and a fifth of the next pass missed). A
// start grants startBudget, not the week.
const enduranceDays = 7

// startBudget is what the endurance bucket holds at start: one day's
// worth (perDay) plus one fill of the device (deviceBytes), at most the
// enduranceDays days' worth the bucket may hold.
//
// The fill is there so that a fresh device fills once at device speed
// whatever drive_writes_per_day says (as long as a week's worth covers a
// device, i.e. at least 1/6 of a drive write a day), with a day's budget
// left for what follows: with one day's worth alone at 1 DWPD, a working
// set as large as the device used up the day on its way down and the sets
// after it were refused (endurance refusals of the later scenarios in a
// bench run in sequence). It is not the week the bucket may hold: a start
// (a deploy, a crash loop) grants at most one more device write than a
// day's budget, not seven days' worth each time.
func startBudget(perDay, deviceBytes int64) int64 {
	week := perDay * enduranceDays
	if deviceBytes >= week-perDay {
		return week
	}
	return perDay + deviceBytes
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

// Budget returns the bytes left in the endurance budget: at most
// enduranceDays × BytesPerDay, negative when writes overdrew it (by at
// most a day's worth).
func (f *Filler) Budget() int64 { return f.day.Tokens() }

// Rate returns the steady-state RateLimiter (for its gauges).
func (f *Filler) Rate() *RateLimiter { return f.rate }

// String describes the Filler's configuration.
func (f *Filler) String() string {
	return fmt.Sprintf("admission: filler: rate %d B/s, burst %d B; endurance %d B/day", f.rate.rate, f.rate.burst, f.perDay)
}

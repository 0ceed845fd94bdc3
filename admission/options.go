package admission

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
)

// Options configures the admission controller New builds: a frequency
// filter then a rate limiter (a Filler when Fill is on and knows the
// device's size), each of which can be disabled.
type Options struct {
	// Frequency configures the TinyLFU filter. Enabled by default.
	Frequency FrequencyOptions
	// RateLimit configures the byte-rate limiter. Enabled by default.
	RateLimit RateOptions
	// Fill lets a device with free space fill past RateLimit, under an
	// endurance budget (Filler). Enabled by default, but it needs
	// Fill.DeviceBytes; it uses RateLimit.Clock.
	Fill FillOptions
}

// FillOptions configures the endurance budget of a Filler.
type FillOptions struct {
	// Disabled leaves the rate limiter alone: no write past its rate.
	// Default false.
	Disabled bool
	// DriveWritesPerDay is the endurance budget, as a multiple of
	// DeviceBytes written a day (all writes, rate-admitted ones included):
	// past it a device no longer fills past the rate. The budget is held
	// as a week's worth, since flash is rated as an average (commonly
	// 1–3 DWPD over 5 years), not per day; it starts with a day's worth
	// plus DeviceBytes (at most the week's). Default 1; at most 100.
	DriveWritesPerDay float64
	// DeviceBytes is the disk tier's size (every device's together), which
	// DriveWritesPerDay multiplies. Default 0: unknown, and New builds a
	// plain rate limiter; the binary sets it from the devices it opened.
	DeviceBytes int64
}

// RateOptions configures a RateLimiter.
type RateOptions struct {
	// Disabled leaves the limiter out of New's chain. Default false.
	Disabled bool
	// BytesPerSecond is the long-run disk write rate. Default 64 MiB/s.
	BytesPerSecond int64
	// BurstBytes is the bucket's size: what may be written at once after an
	// idle spell. Default one second's worth (BytesPerSecond); at most an
	// hour's worth.
	BurstBytes int64
	// Clock is the time source. Default MonotonicClock(); tests inject a
	// *ManualClock, owners with a coarse clock pass it.
	Clock Clock
}

// FrequencyOptions configures a FrequencyFilter.
type FrequencyOptions struct {
	// Disabled leaves the filter out of New's chain. Default false.
	Disabled bool
	// MinFrequency is the estimated number of accesses in the current
	// window a key needs to be admitted. Default 2 (one-hit wonders stay
	// out); 1 to 16.
	MinFrequency int
	// Keys is the number of distinct keys the sketch is sized for: one
	// 8-byte word (16 four-bit counters) per key. Default 262144 (2 MiB);
	// 64 to 2^30.
	Keys int
	// Window is the number of Record calls after which every counter is
	// halved and the doorkeeper cleared, so old popularity fades. The
	// doorkeeper takes one byte per window sample. Default 10 × Keys;
	// at least Keys, at most 2^34.
	Window int64
	// Shards is the number of independent sketches (a power of two, at
	// most 1024): concurrent Records touch different counters and halving
	// pauses one shard at a time. Default: 4 × GOMAXPROCS rounded up to a
	// power of two, reduced so that each shard keeps at least 4 KiB of
	// counters.
	Shards int
	// Seed keys the hash mixing, so clients cannot aim keys at chosen
	// counters. Default 0: a random seed per filter. Set it only for
	// reproducible tests.
	Seed uint64
}

// Defaults.
const (
	DefaultBytesPerSecond = 64 << 20
	// DefaultDriveWritesPerDay is FillOptions.DriveWritesPerDay's default.
	DefaultDriveWritesPerDay = 1.0
	maxDriveWritesPerDay     = 100
	DefaultMinFrequency      = 2
	DefaultKeys              = 1 << 18
	DefaultWindowPerKey      = 10
	maxMinFrequency          = 16 // 15 in a 4-bit counter + 1 from the doorkeeper
	minKeys                  = 64
	maxKeys                  = 1 << 30
	maxWindow                = 1 << 34
	maxShards                = 1024
	minShardWords            = 512 // 4 KiB of counters per shard
	maxBurstSeconds          = 3600
)

// EnsureDefaults fills every zero field with its default.
func (o *Options) EnsureDefaults() {
	o.Frequency.EnsureDefaults()
	o.RateLimit.EnsureDefaults()
	o.Fill.EnsureDefaults()
}

// Validate reports every problem of the enabled members at once, each
// wrapping ErrInvalidOptions. Call it after EnsureDefaults.
func (o *Options) Validate() error {
	var errs []error
	if !o.Frequency.Disabled {
		errs = append(errs, o.Frequency.Validate())
	}
	if !o.RateLimit.Disabled {
		errs = append(errs, o.RateLimit.Validate())
	}
	if !o.Fill.Disabled {
		errs = append(errs, o.Fill.Validate())
	}
	return errors.Join(errs...)
}

// New builds the Controller o describes: Chain(frequency filter, rate
// limiter) without the disabled members, the rate limiter being a Filler
// when Fill is enabled and Fill.DeviceBytes > 0. With both disabled it
// admits everything. It applies EnsureDefaults to a copy of o, then
// Validate.
func New(o Options) (Controller, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var cs []Controller
	if !o.Frequency.Disabled {
		f, err := NewFrequencyFilter(o.Frequency)
		if err != nil {
			return nil, err
		}
		cs = append(cs, f)
	}
	switch {
	case o.RateLimit.Disabled:
	case !o.Fill.Disabled && o.Fill.DeviceBytes > 0:
		f, err := NewFiller(o.RateLimit, o.Fill)
		if err != nil {
			return nil, err
		}
		cs = append(cs, f)
	default:
		l, err := NewRateLimiter(o.RateLimit)
		if err != nil {
			return nil, err
		}
		cs = append(cs, l)
	}
	return Chain(cs...), nil
}

// EnsureDefaults fills every zero field with its default.
func (o *FillOptions) EnsureDefaults() {
	if o.DriveWritesPerDay == 0 {
		o.DriveWritesPerDay = DefaultDriveWritesPerDay
	}
}

// Validate reports every problem at once, each wrapping ErrInvalidOptions.
func (o *FillOptions) Validate() error {
	var errs []error
	if !(o.DriveWritesPerDay > 0 && o.DriveWritesPerDay <= maxDriveWritesPerDay) { // NaN too
		errs = append(errs, fmt.Errorf("%w: fill.drive_writes_per_day %g must be in (0, %d]",
			ErrInvalidOptions, o.DriveWritesPerDay, maxDriveWritesPerDay))
	}
	if o.DeviceBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: fill.device_bytes %d must be >= 0", ErrInvalidOptions, o.DeviceBytes))
	}
	return errors.Join(errs...)
}

// BytesPerDay is the endurance budget: DriveWritesPerDay × DeviceBytes.
func (o *FillOptions) BytesPerDay() int64 {
	return int64(o.DriveWritesPerDay * float64(o.DeviceBytes))
}

// EnsureDefaults fills every zero field with its default.
func (o *RateOptions) EnsureDefaults() {
	if o.BytesPerSecond == 0 {
		o.BytesPerSecond = DefaultBytesPerSecond
	}
	if o.BurstBytes == 0 && o.BytesPerSecond > 0 {
		o.BurstBytes = o.BytesPerSecond
	}
	if o.Clock == nil {
		o.Clock = MonotonicClock()
	}
}

// Validate reports every problem at once, each wrapping ErrInvalidOptions.
func (o *RateOptions) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: rate_limit."+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if o.BytesPerSecond <= 0 {
		bad("bytes_per_second %d must be > 0", o.BytesPerSecond)
	}
	// A zero burst is only left by EnsureDefaults when the rate is bad:
	// the rate's error says it all.
	if o.BurstBytes < 0 || (o.BurstBytes == 0 && o.BytesPerSecond > 0) {
		bad("burst_bytes %d must be > 0", o.BurstBytes)
	} else if o.BytesPerSecond > 0 && float64(o.BurstBytes) > float64(o.BytesPerSecond)*maxBurstSeconds {
		bad("burst_bytes %d exceeds %d s of bytes_per_second %d", o.BurstBytes, maxBurstSeconds, o.BytesPerSecond)
	}
	if o.Clock == nil {
		bad("clock must be set (EnsureDefaults sets it)")
	}
	return errors.Join(errs...)
}

// EnsureDefaults fills every zero field with its default.
func (o *FrequencyOptions) EnsureDefaults() {
	if o.MinFrequency == 0 {
		o.MinFrequency = DefaultMinFrequency
	}
	if o.Keys == 0 {
		o.Keys = DefaultKeys
	}
	if o.Window == 0 && o.Keys > 0 {
		o.Window = DefaultWindowPerKey * int64(o.Keys)
	}
	if o.Shards == 0 && o.Keys > 0 {
		o.Shards = defaultShards(o.Keys, runtime.GOMAXPROCS(0))
	}
}

// defaultShards is 4 × procs rounded up to a power of two, halved until
// every shard has minShardWords words of counters (or one shard is left).
func defaultShards(keys, procs int) int {
	n := 1 << bits.Len(uint(4*procs-1))
	for n > 1 && keys/n < minShardWords {
		n /= 2
	}
	return min(n, maxShards)
}

// Validate reports every problem at once, each wrapping ErrInvalidOptions.
func (o *FrequencyOptions) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: frequency."+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if o.MinFrequency < 1 || o.MinFrequency > maxMinFrequency {
		bad("min_frequency %d must be in [1, %d]", o.MinFrequency, maxMinFrequency)
	}
	if o.Keys < minKeys || o.Keys > maxKeys {
		bad("keys %d must be in [%d, %d]", o.Keys, minKeys, maxKeys)
	}
	if o.Window < int64(o.Keys) || o.Window > maxWindow {
		bad("window %d must be in [keys (%d), %d]", o.Window, o.Keys, int64(maxWindow))
	}
	if o.Shards < 1 || o.Shards > maxShards || o.Shards&(o.Shards-1) != 0 {
		bad("shards %d must be a power of two in [1, %d]", o.Shards, maxShards)
	} else if o.Keys/o.Shards < 4 {
		bad("shards %d leave fewer than 4 counter words per shard for keys %d", o.Shards, o.Keys)
	}
	return errors.Join(errs...)
}

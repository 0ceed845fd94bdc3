package admission

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Clock reads monotonic time in nanoseconds. Only differences between
// readings matter; the origin is arbitrary. Implementations must be safe
// for concurrent use and never go backwards.
//
// time.Now costs about 80 ns on our machines and time.Since about 45 ns; an
// owner can run a CoarseClock (or pass a coarse clock of its own) to make
// throttled Admit calls cheap. The RateLimiter reads its Clock only in Charge and in an
// Admit that finds the bucket possibly empty, never while tokens are known
// to remain.
type Clock interface {
	Nanotime() int64
}

// MonotonicClock returns a Clock backed by the runtime's monotonic clock
// (time.Since of a start instant). It starts no goroutine.
func MonotonicClock() Clock { return monoClock{start: time.Now()} }

type monoClock struct{ start time.Time }

func (c monoClock) Nanotime() int64 { return int64(time.Since(c.start)) }

// ManualClock is a Clock that moves only when told: the fake for tests, so
// that seconds of traffic are simulated in microseconds. The zero value
// reads 0. Safe for concurrent use.
type ManualClock struct{ ns atomic.Int64 }

var _ Clock = (*ManualClock)(nil)

// Nanotime implements Clock.
func (c *ManualClock) Nanotime() int64 { return c.ns.Load() }

// Advance moves the clock forward by d. A negative d is ignored, so the
// clock never goes backwards.
func (c *ManualClock) Advance(d time.Duration) {
	if d > 0 {
		c.ns.Add(int64(d))
	}
}

// CoarseClock is a Clock that reads a timestamp refreshed every resolution
// by a goroutine of its own: a reading costs one atomic load (about 1 ns
// instead of 45–80 ns) and lags real time by up to one resolution plus
// scheduling delay. A RateLimiter on it admits up to that much later than
// it could, never more than it should, and keeps its long-run rate.
//
// An idle clock stops ticking. After parkAfter ticks with no reading the
// goroutine parks; the next reading takes the time itself (a clock read,
// as MonotonicClock) and wakes it. A ticking clock woke its process 1,000
// times a second with nothing to do: an idle strata spent about 30 ms of
// CPU per second and 2,700 context switches on it, and every idle node on
// a shared machine took that from the busy ones. Readings never go
// backwards: whoever refreshes the timestamp (the goroutine, or a reading
// while it is parked) only ever raises it.
//
// Ownership. NewCoarseClock starts the goroutine; its caller owns it and
// must Close it after the clock's last user is done (hybrid: after its
// flushers stopped). Once Close has returned, and readings begun before it
// are done, the clock stands still.
type CoarseClock struct {
	now   atomic.Int64
	start time.Time
	// read is set by a reading that finds it clear and cleared by each
	// tick that finds it set: ticks that find it clear count towards
	// parking. Set only when clear, so readings on many cores share the
	// cache line instead of taking it in turn.
	read atomic.Bool
	// parked: the goroutine waits on wake instead of ticking.
	parked    atomic.Bool
	closed    atomic.Bool
	wake      chan struct{} // room for one wake-up
	parkAfter int           // idle ticks before the goroutine parks
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once
}

var _ Clock = (*CoarseClock)(nil)

// DefaultCoarseResolution is NewCoarseClock's resolution when given <= 0.
const DefaultCoarseResolution = time.Millisecond

// coarseParkAfter is how many ticks without a reading park a CoarseClock's
// goroutine: 100 ms at the default resolution.
const coarseParkAfter = 100

// NewCoarseClock starts a clock refreshed every resolution (default
// DefaultCoarseResolution when resolution <= 0).
func NewCoarseClock(resolution time.Duration) *CoarseClock {
	return newCoarseClock(resolution, coarseParkAfter)
}

func newCoarseClock(resolution time.Duration, parkAfter int) *CoarseClock {
	if resolution <= 0 {
		resolution = DefaultCoarseResolution
	}
	c := &CoarseClock{start: time.Now(), wake: make(chan struct{}, 1), parkAfter: parkAfter,
		stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(resolution)
	return c
}

func (c *CoarseClock) run(resolution time.Duration) {
	defer close(c.done)
	t := time.NewTicker(resolution)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.advance()
		if c.read.Load() {
			c.read.Store(false)
			idle = 0
			continue
		}
		if idle++; idle < c.parkAfter {
			continue
		}
		// Park. A reading sets read before it looks at parked, and this
		// looks at read after setting parked: either the reading sees
		// parked (and wakes the goroutine) or this sees read (and goes
		// on ticking). A wake-up left over from such a race only makes
		// the next park a short one.
		t.Stop()
		c.parked.Store(true)
		if !c.read.Load() {
			select {
			case <-c.stop:
				return
			case <-c.wake:
			}
		}
		c.parked.Store(false)
		c.advance()
		t.Reset(resolution)
		idle = 0
	}
}

// advance raises the timestamp to now, unless a reading already took it
// further.
func (c *CoarseClock) advance() {
	v := int64(time.Since(c.start))
	for old := c.now.Load(); v > old; old = c.now.Load() {
		if c.now.CompareAndSwap(old, v) {
			return
		}
	}
}

// Nanotime implements Clock.
func (c *CoarseClock) Nanotime() int64 {
	if !c.read.Load() {
		c.read.Store(true)
	}
	if c.parked.Load() && !c.closed.Load() {
		c.advance()
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return c.now.Load()
}

// Close stops the goroutine and waits for it, or for ctx. It may be called
// more than once.
func (c *CoarseClock) Close(ctx context.Context) error {
	c.once.Do(func() {
		c.closed.Store(true)
		close(c.stop)
	})
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("admission: closing coarse clock: %w", ctx.Err())
	}
}

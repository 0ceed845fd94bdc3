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
// Ownership. NewCoarseClock starts the goroutine; its caller owns it and
// must Close it after the clock's last user is done (hybrid: after its
// flushers stopped). After Close the clock stands still.
type CoarseClock struct {
	now   atomic.Int64
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

var _ Clock = (*CoarseClock)(nil)

// DefaultCoarseResolution is NewCoarseClock's resolution when given <= 0.
const DefaultCoarseResolution = time.Millisecond

// NewCoarseClock starts a clock refreshed every resolution (default
// DefaultCoarseResolution when resolution <= 0).
func NewCoarseClock(resolution time.Duration) *CoarseClock {
	if resolution <= 0 {
		resolution = DefaultCoarseResolution
	}
	c := &CoarseClock{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(resolution)
	return c
}

func (c *CoarseClock) run(resolution time.Duration) {
	defer close(c.done)
	t := time.NewTicker(resolution)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.now.Store(int64(time.Since(c.start)))
		}
	}
}

// Nanotime implements Clock.
func (c *CoarseClock) Nanotime() int64 { return c.now.Load() }

// Close stops the goroutine and waits for it, or for ctx. It may be called
// more than once.
func (c *CoarseClock) Close(ctx context.Context) error {
	c.once.Do(func() { close(c.stop) })
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("admission: closing coarse clock: %w", ctx.Err())
	}
}

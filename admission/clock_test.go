package admission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain fails the package if a test leaves a CoarseClock goroutine
// running (the package imports only the standard library, so this stands in
// for goleak.VerifyTestMain).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leak := leakedClocks(time.Second); leak != "" {
			fmt.Fprintf(os.Stderr, "admission: leaked goroutines:\n%s\n", leak)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedClocks returns the stacks of running CoarseClock goroutines, after
// waiting up to grace for them to end.
func leakedClocks(grace time.Duration) string {
	deadline := time.Now().Add(grace)
	buf := make([]byte, 1<<20)
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaks []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "admission.(*CoarseClock).run") {
				leaks = append(leaks, g)
			}
		}
		if len(leaks) == 0 || time.Now().After(deadline) {
			return strings.Join(leaks, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestManualClock(t *testing.T) {
	var c ManualClock
	if c.Nanotime() != 0 {
		t.Fatal("zero ManualClock does not read 0")
	}
	c.Advance(time.Second)
	c.Advance(-time.Hour)
	c.Advance(0)
	if got := c.Nanotime(); got != int64(time.Second) {
		t.Fatalf("after +1s, -1h (ignored): %d", got)
	}
}

func TestMonotonicClock(t *testing.T) {
	c := MonotonicClock()
	prev := c.Nanotime()
	for range 1000 {
		now := c.Nanotime()
		if now < prev {
			t.Fatalf("went backwards: %d after %d", now, prev)
		}
		prev = now
	}
}

// TestCoarseClock: it moves, lags real time by little, and stops on Close.
func TestCoarseClock(t *testing.T) {
	c := NewCoarseClock(time.Millisecond)
	defer c.Close(context.Background())
	mono := MonotonicClock()
	start, first := mono.Nanotime(), c.Nanotime()
	for c.Nanotime() < first+int64(20*time.Millisecond) {
		if mono.Nanotime()-start > int64(5*time.Second) {
			t.Fatalf("coarse clock did not advance 20ms in 5s (reads %d)", c.Nanotime())
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	stopped := c.Nanotime()
	time.Sleep(5 * time.Millisecond)
	if c.Nanotime() != stopped {
		t.Fatal("clock moved after Close")
	}
	if leak := leakedClocks(time.Second); leak != "" {
		t.Fatalf("goroutine still running after Close:\n%s", leak)
	}
}

func TestCoarseClockCloseContext(t *testing.T) {
	c := &CoarseClock{stop: make(chan struct{}), done: make(chan struct{})} // no goroutine: never done
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Close(ctx); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "admission: ") {
		t.Fatalf("Close on a cancelled ctx = %v", err)
	}
	if d := NewCoarseClock(0); d != nil {
		d.Close(context.Background())
	}
}

// waitFor polls cond every millisecond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestCoarseClockParks: a clock nobody reads stops ticking; the next
// reading is current (not the timestamp of the last tick) and starts the
// ticks again.
func TestCoarseClockParks(t *testing.T) {
	c := newCoarseClock(time.Millisecond, 5)
	defer c.Close(context.Background())
	if !waitFor(5*time.Second, c.parked.Load) {
		t.Fatal("an unread clock did not park in 5s")
	}
	stale := c.now.Load()
	time.Sleep(20 * time.Millisecond)
	if c.now.Load() != stale {
		t.Fatal("a parked clock ticked")
	}
	before := int64(time.Since(c.start))
	if got := c.Nanotime(); got < before {
		t.Fatalf("first reading after parking = %v, want at least %v (real time)", time.Duration(got), time.Duration(before))
	}
	if !waitFor(5*time.Second, func() bool { return !c.parked.Load() }) {
		t.Fatal("a reading did not wake the clock")
	}
	// Ticking again: it moves with nobody reading (for less than 5 ticks).
	c.Nanotime()
	from := c.now.Load()
	if !waitFor(5*time.Second, func() bool { return c.now.Load() > from || c.parked.Load() }) || c.parked.Load() && c.now.Load() == from {
		t.Fatal("the woken clock does not tick")
	}
}

// TestCoarseClockReadersAcrossParks: readers that come and go, so the
// clock parks and wakes many times, each see it never go backwards and
// never ahead of real time.
func TestCoarseClockReadersAcrossParks(t *testing.T) {
	c := newCoarseClock(time.Millisecond, 2)
	defer c.Close(context.Background())
	var parks atomic.Int64
	errs := make(chan error, 4)
	end := time.Now().Add(300 * time.Millisecond)
	for g := range 4 {
		go func() {
			prev := int64(0)
			for i := 0; time.Now().Before(end); i++ {
				if c.parked.Load() {
					parks.Add(1)
				}
				got := c.Nanotime()
				if real := int64(time.Since(c.start)); got > real {
					errs <- fmt.Errorf("reader %d: reading %v ahead of real time %v", g, time.Duration(got), time.Duration(real))
					return
				}
				if got < prev {
					errs <- fmt.Errorf("reader %d: went backwards: %v after %v", g, time.Duration(got), time.Duration(prev))
					return
				}
				prev = got
				time.Sleep(time.Duration((g+i)%6) * time.Millisecond)
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if parks.Load() == 0 {
		t.Log("no reader found the clock parked (a busy machine); order was checked all the same")
	}
}

package admission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
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

package proxy

import (
	"sync"
	"sync/atomic"
	"time"
)

// bodyBudget bounds the bytes held by responses streaming stored sliced
// bodies (Options.MaxStreamBytes): each holds a slice buffer while it
// streams, plus the slices it reads before its status line. Without it a
// burst of large hits could hold a slice each past any memory budget.
//
// The fast path is one atomic add. A caller that finds the budget spent
// waits on a condition variable, woken by every release while anyone
// waits, until its deadline; the first holder always gets in (a single
// body larger than the whole budget is not refused forever). The bound is
// soft: a caller whose deadline passed takes its bytes anyway (force),
// and the overrun is counted, so that sustained overload costs memory
// past the bound rather than failed hits.
type bodyBudget struct {
	max     int64
	used    atomic.Int64
	waiters atomic.Int32
	mu      sync.Mutex
	cond    sync.Cond
}

func (b *bodyBudget) init(max int64) {
	b.max = max
	b.cond.L = &b.mu
}

// tryAcquire takes n bytes if they fit now.
func (b *bodyBudget) tryAcquire(n int64) bool {
	if u := b.used.Add(n); u <= b.max || u == n {
		return true
	}
	b.used.Add(-n) // undoes our own add: nothing was freed, nobody to wake
	return false
}

// acquire takes n bytes, waiting up to wait for room; false if none came.
func (b *bodyBudget) acquire(n int64, wait time.Duration) bool {
	if b.tryAcquire(n) {
		return true
	}
	deadline := time.Now().Add(wait)
	t := time.AfterFunc(wait, b.wake)
	defer t.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiters.Add(1)
	defer b.waiters.Add(-1)
	for !b.tryAcquire(n) {
		if !time.Now().Before(deadline) {
			return false
		}
		b.cond.Wait()
	}
	return true
}

// force takes n bytes whether or not they fit.
func (b *bodyBudget) force(n int64) { b.used.Add(n) }

// release gives n bytes back and wakes waiters, if any.
func (b *bodyBudget) release(n int64) {
	b.used.Add(-n)
	if b.waiters.Load() > 0 {
		b.wake()
	}
}

func (b *bodyBudget) wake() {
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
}

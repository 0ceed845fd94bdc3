package disk

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// recovered handles a panic caught in one of the engine's background
// goroutines (flushers, reclaimers, I/O workers): it counts it, logs it
// with the stack and, under -tags invariants, panics again. Callers call
// it from their deferred recover and then put their state right (signal
// the waiting Get, fail the write, give back the reclaim ticket).
func (e *Engine) recovered(where string, r any) {
	e.c.panics.Add(1)
	e.opts.Logger.Error("disk: panic in background goroutine", "where", where, "panic", r,
		"stack", string(debug.Stack()))
	if invariants {
		panic(r)
	}
}

// gate admits operations while the engine is open and lets Close wait
// for those in progress. It replaces an RWMutex that every Get and Insert
// shared: the count of operations in progress is striped by key hash over
// cache-line-sized counters, so concurrent operations on different keys
// touch different lines. enter increments, then checks closed; shut sets
// closed, then waits for every stripe to drain. With sequentially
// consistent atomics at least one side sees the other (the Dekker
// pattern), so no operation runs after shut returns. The last operation of
// a stripe to leave a shut gate signals the cond; nobody spins.
type gate struct {
	closed  atomic.Bool
	stripes [gateStripes]struct {
		n atomic.Int64
		_ [56]byte
	}
	mu   sync.Mutex
	cond sync.Cond // on mu; set up by init
}

func (g *gate) init() { g.cond.L = &g.mu }

const gateStripes = 64

// enter registers an operation on the key hashing to h; false: closed.
func (g *gate) enter(h uint64) bool {
	c := &g.stripes[h%gateStripes].n
	c.Add(1)
	if g.closed.Load() {
		g.exit(h)
		return false
	}
	return true
}

// exit ends an operation begun by a successful enter(h).
func (g *gate) exit(h uint64) {
	if g.stripes[h%gateStripes].n.Add(-1) == 0 && g.closed.Load() {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	}
}

// shut closes the gate and waits until no operation is in progress.
func (g *gate) shut() {
	g.closed.Store(true)
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.stripes {
		for g.stripes[i].n.Load() != 0 {
			g.cond.Wait()
		}
	}
}

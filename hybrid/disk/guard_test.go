package disk

import (
	"sync/atomic"
	"testing"
	"time"

	"strata/blockdev"
)

// panicOnce returns a Fault.Match that panics the first time it is called
// after arm is set, and otherwise matches nothing.
func panicOnce(arm *atomic.Bool) func(int64, int) bool {
	return func(int64, int) bool {
		if arm.CompareAndSwap(true, false) {
			panic("injected panic")
		}
		return false
	}
}

// TestRecoversPanics: a panic in a write worker, a read worker or a
// reclaimer is recovered and counted; the write fails cleanly, the read is
// a miss, and the engine goes on working (regions keep being reclaimed).
// Under -tags invariants the engine re-panics by design.
func TestRecoversPanics(t *testing.T) {
	if invariants {
		t.Skip("under -tags invariants a recovered panic is raised again")
	}
	dev, _ := newFaulty(t, 8<<20)
	e := openT(t, dev, testOpts())
	defer closeT(t, e)
	var armW, armR atomic.Bool
	dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Match: panicOnce(&armW)})
	dev.Inject(blockdev.Fault{Op: blockdev.OpRead, Match: panicOnce(&armR)})

	insertAll(t, e, "a", 10, 1, 300)
	armW.Store(true)
	insertAll(t, e, "b", 10, 1, 300)
	if s := e.Stats(); s.Panics != 1 || s.WriteFailed == 0 {
		t.Fatalf("write panic: panics %d, write failed %d", s.Panics, s.WriteFailed)
	}
	armR.Store(true)
	if _, ok := e.Get(keyN("a", 0), nil); ok || e.Stats().Panics != 2 {
		t.Fatalf("read panic: hit %v, panics %d", ok, e.Stats().Panics)
	}
	expect(t, e, "a", 10, 1)

	// With no Gets running, the next read is a reclaimer's scan.
	armR.Store(true)
	reclaims := e.Stats().Reclaims
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; e.Stats().Panics < 3 || e.Stats().Reclaims < reclaims+4; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("panics %d, reclaims %d → %d", e.Stats().Panics, reclaims, e.Stats().Reclaims)
		}
		k := keyN("c", i)
		for !e.Insert(k, mval(k, 1, 2000), time.Time{}) {
			settle(t, e)
		}
	}
	settle(t, e)
	insertAll(t, e, "d", 10, 1, 300)
	expect(t, e, "d", 10, 1)
}

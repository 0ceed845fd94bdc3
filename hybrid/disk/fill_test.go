package disk

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// fillAdmitter is a FillAdmitter that admits what the device says it can
// take and counts how it was asked.
type fillAdmitter struct {
	to, plain atomic.Int64
	dev       atomic.Value // the last device AdmitTo was given
}

func (a *fillAdmitter) Admit(uint64, int) bool { a.plain.Add(1); return true }
func (a *fillAdmitter) Written(int)            {}
func (a *fillAdmitter) AdmitTo(dev interface{ Filling() bool }, _ uint64, _ int) bool {
	a.to.Add(1)
	a.dev.Store(dev)
	return dev.Filling()
}

// TestFilling: a device is Filling while its write queue is short and
// it has room: never-written regions beyond the reclaimers' reserve (a
// fresh device: writing there evicts nothing), or, once those are
// written, reclaimers that keep up with their reserve (each region
// written is then one reclaimed; the reserve may lack the one a reclaimer
// is refilling). Reclaimers behind, or a region's worth queued on a full
// device, stop it. Insert asks a FillAdmitter's AdmitTo with the
// engine itself.
func TestFilling(t *testing.T) {
	o := testOpts() // 1 MiB regions, CleanRegions 3, queue 4 MiB
	adm := &fillAdmitter{}
	o.Admission = adm
	e := openT(t, newMem(t, 16<<20), o)
	defer closeT(t, e)
	if !e.Filling() || e.Stats().Filling != 1 {
		t.Fatalf("fresh device: Filling false (clean %d)", len(e.regions.clean))
	}

	// The write queue building up stops the fill.
	for _, tc := range []struct {
		queued int64
		want   bool
	}{{o.QueueBytes/2 - 1, true}, {o.QueueBytes / 2, false}, {o.QueueBytes, false}, {0, true}} {
		e.queued.Add(tc.queued)
		got := e.Filling()
		e.queued.Add(-tc.queued)
		if got != tc.want {
			t.Errorf("queued %d of %d: Filling %v, want %v", tc.queued, o.QueueBytes, got, tc.want)
		}
	}

	// Write values four times the device's size, each once the last is
	// written and the reclaimers have caught up: every one is admitted.
	// The never-written regions go first, evicting nothing (a 64 KiB
	// buffer holds one 60 KiB entry; the flushers' open regions are
	// partly written); then each region written is one reclaimed.
	v := make([]byte, 60<<10)
	s := e.Stats()
	fresh := (s.Regions - e.opts.CleanRegions - o.Flushers) * int(o.RegionSize) / o.BufferSize
	const n = 4 * 16
	for i := range n * int(o.RegionSize) / o.BufferSize {
		waitReserve(t, e)
		if !e.Insert(fmt.Appendf(nil, "k%d", i), v, time.Time{}) {
			t.Fatalf("insert %d refused (clean %d, reserve %d, queued %d)", i, len(e.regions.clean), e.regions.target, e.queued.Load())
		}
		settle(t, e)
		if s := e.Stats(); i < fresh && (s.Reclaims != 0 || s.Evictions != 0) {
			t.Fatalf("insert %d of %d that fit a fresh device: reclaims %d, evictions %d", i, fresh, s.Reclaims, s.Evictions)
		}
	}
	if adm.plain.Load() != 0 || adm.dev.Load() != interface{ Filling() bool }(e) {
		t.Fatalf("AdmitTo %d times, Admit %d, device %v: want AdmitTo with the engine each time",
			adm.to.Load(), adm.plain.Load(), adm.dev.Load())
	}
	if s := e.Stats(); s.Reclaims == 0 || s.Evictions == 0 {
		t.Fatalf("after writing the device four times over: reclaims %d, evictions %d", s.Reclaims, s.Evictions)
	}

	// A full device: the reclaimers keeping their reserve is its room.
	waitReserve(t, e)
	if !e.Filling() {
		t.Fatalf("full device, reserve kept, queue empty: Filling false")
	}
	id := <-e.regions.clean // a flusher took one; a reclaimer refills it
	if !e.Filling() {
		t.Errorf("full device, reserve one short (a reclaim under way): Filling false")
	}
	id2 := <-e.regions.clean // the reclaimers are behind
	if e.Filling() {
		t.Errorf("full device, reserve two short (reclaimers behind): Filling true")
	}
	e.regions.clean <- id2
	e.regions.clean <- id
	e.queued.Add(o.RegionSize) // a region's worth queued
	if e.Filling() {
		t.Errorf("full device, a region's worth queued: Filling true")
	}
	e.queued.Add(-o.RegionSize)
}

// TestKeepingUp: on a full device, the reserve may lack the one region a
// reclaimer is refilling, never its last one.
func TestKeepingUp(t *testing.T) {
	f := func(clean, target int, want bool) {
		t.Helper()
		if got := keepingUp(clean, target); got != want {
			t.Errorf("keepingUp(clean %d, target %d) = %v, want %v", clean, target, got, want)
		}
	}
	f(3, 3, true)  // whole reserve
	f(2, 3, true)  // one short: a reclaim under way
	f(1, 3, false) // two short: reclaimers behind
	f(0, 3, false)
	f(1, 1, true)  // a reserve of one
	f(0, 1, false) // ... is never one short: a flusher would wait
	f(7, 8, true)
	f(6, 8, false)
}

// waitReserve waits for the reclaimers to fill their reserve of clean
// regions.
func waitReserve(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(e.regions.clean) < e.regions.target {
		if time.Now().After(deadline) {
			t.Fatalf("reclaimers did not refill their reserve: clean %d of %d", len(e.regions.clean), e.regions.target)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

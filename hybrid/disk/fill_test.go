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

// TestFilling: a fresh device is Filling while it has never-written
// regions beyond the reclaimers' reserve and a short write queue; once
// those regions are written it is not, and every region written after
// that is one reclaimed. Insert asks a FillAdmitter's AdmitTo with the
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

	// Write values until the device refuses them: the never-written
	// regions are used up, less what was queued when each was asked.
	v := make([]byte, 60<<10)
	admitted := 0
	for i := range 400 {
		if e.Insert(fmt.Appendf(nil, "k%d", i), v, time.Time{}) {
			admitted++
		}
		settle(t, e)
	}
	if adm.to.Load() != 400 || adm.plain.Load() != 0 || adm.dev.Load() != interface{ Filling() bool }(e) {
		t.Fatalf("AdmitTo %d times, Admit %d, device %v: want AdmitTo with the engine each time",
			adm.to.Load(), adm.plain.Load(), adm.dev.Load())
	}
	s := e.Stats()
	if e.Filling() || s.Filling != 0 {
		t.Fatalf("after %d admitted: still Filling (clean %d of %d regions)", admitted, s.CleanRegions, s.Regions)
	}
	// Every region but the reserve was filled (the flushers' open ones
	// partly), and none was reclaimed: the fill evicted nothing. A 64 KiB
	// buffer holds one 60 KiB entry.
	perRegion := int(o.RegionSize) / o.BufferSize
	lo, hi := (s.Regions-e.opts.CleanRegions-o.Flushers)*perRegion, (s.Regions-e.opts.CleanRegions)*perRegion
	if admitted < lo || admitted > hi || s.Reclaims != 0 || s.Evictions != 0 {
		t.Fatalf("admitted %d (want %d..%d), reclaims %d, evictions %d", admitted, lo, hi, s.Reclaims, s.Evictions)
	}
	if s.DropAdmission != uint64(400-admitted) {
		t.Fatalf("dropped by admission %d, want %d", s.DropAdmission, 400-admitted)
	}
}

package disk

import (
	"fmt"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
)

// TestShadowBeforeZero: an out-of-order reclaim must not zero its victim's
// header before the tombstones that shadow what it dropped are on the
// device. The scenario is TestReopenEmptiestShadowedCopy's (region A holds
// v1 of k, region B, sealed early by a failed write, holds v2; the
// emptiest picker takes B first), but every write outside B hangs, so the
// shadow tombstone cannot be written. A crash at that moment must still
// not find v1: B's header must still be intact (v2 wins the scan).
func TestShadowBeforeZero(t *testing.T) {
	o := testOpts()
	o.Flushers, o.CleanRegions, o.Picker = 1, 2, PickerEmptiest
	o.Runtime = RuntimeDisabled
	mem := newMem(t, 1024+4<<20)
	dev := blockdev.NewFaulty(mem, 1)
	e := openT(t, dev, o)
	k := []byte("shadowed")
	if !e.Insert(k, mval(k, 1, 300), time.Time{}) {
		t.Fatal("insert v1 refused")
	}
	settle(t, e)
	for i := 0; e.Stats().SealedRegions == 0; i++ { // fill region A
		insertAll(t, e, fmt.Sprintf("a%d-", i), 1, 1, 30<<10)
		if i > 100 {
			t.Fatal("region A never sealed")
		}
	}
	if !e.Insert(k, mval(k, 2, 300), time.Time{}) {
		t.Fatal("insert v2 refused")
	}
	settle(t, e)
	at, _ := e.ix.get(xxhash.Sum64(k))
	regionB, _, _ := e.lay.unpack(at)
	lo, hi := e.lay.regionBase(regionB), e.lay.regionBase(regionB)+e.lay.regionSize
	dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Fail, Nth: 1})
	dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Hang,
		Match: func(off int64, n int) bool { return off < lo || off >= hi }})
	defer func() {
		dev.Clear()
		closeT(t, e)
	}()
	e.Insert([]byte("doomed"), mval([]byte("doomed"), 1, 300), time.Time{})
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().ShadowTombstones == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("scenario not built: stats %+v", e.Stats())
		}
		time.Sleep(100 * time.Microsecond)
	}
	// Give the reclaimer time to zero B (it does so at once without the
	// fix); with it, it waits for the hung tombstone write.
	for end := time.Now().Add(200 * time.Millisecond); e.Stats().Reclaims == 0 && time.Now().Before(end); {
		time.Sleep(100 * time.Microsecond)
	}
	crashed := mem.CrashClone()
	t.Logf("at the crash: reclaims %d, shadow tombstones %d, hanging writes %d",
		e.Stats().Reclaims, e.Stats().ShadowTombstones, dev.Hanging())
	r := openT(t, crashed, o)
	defer closeT(t, r)
	v, ok := r.Get(k, nil)
	if ver, _ := checkWhole(k, v); ok && ver != 2 {
		t.Fatalf("after a crash: version %d served, newest is 2", ver)
	}
}

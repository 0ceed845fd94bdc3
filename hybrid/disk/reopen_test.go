package disk

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
)

// TestReopenNewestUnderWriteFaults: random inserts and removes from many
// goroutines while 3% of writes fail (except reclaim's one-block header
// zeroing), then a clean Close and two reopens (from the checkpoint, then
// a strict scan): every hit must be the key's newest accepted value, as
// the engine promises unless a tombstone was given up (TombstonesLost). In
// the unified/emptiest/reinsertion variant an older version used to come
// back after restart (5 runs in 480 with three copies of the test binary
// at once): a region sealed early by a failed write, holding a key's
// newest version, was reclaimed before an older region holding an older
// one (TestReopenEmptiestShadowedCopy builds that case on purpose). One
// round by default (about 0.3 s); STRATA_REPRO_ROUNDS sets more.
func TestReopenNewestUnderWriteFaults(t *testing.T) {
	rounds := 1
	if s := os.Getenv("STRATA_REPRO_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	for round := range rounds {
		for _, tc := range []struct {
			name string
			edit func(*Options)
		}{
			{"delay-sep", func(o *Options) { o.FlushDelay = 200 * time.Microsecond }},
			{"now-unified-emptiest", func(o *Options) { o.Runtime, o.Picker, o.Reinsertion = RuntimeUnified, PickerEmptiest, true }},
			{"disabled", func(o *Options) { o.Runtime, o.FlushDelay = RuntimeDisabled, 50*time.Microsecond }},
		} {
			t.Run(fmt.Sprintf("%s-%d", tc.name, round), func(t *testing.T) {
				o := testOpts()
				o.QueueBytes = 256 << 10
				o.Flushers = 1 + round%2
				tc.edit(&o)
				mem := newMem(t, 1024+6<<20)
				dev := blockdev.NewFaulty(mem, uint64(round+1))
				dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Fail, Prob: 0.03, Match: func(off int64, n int) bool {
					return off >= 2048 && (n > 512 || (off-1024)%(1<<20) != 0) // not a reclaim's header zeroing
				}})
				e := openT(t, dev, o)
				const workers, keys = 6, 30
				models := make([][]reopenState, workers)
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						m, err := reopenWorker(e, w, keys, 1500, uint64(round))
						models[w] = m
						errs <- err
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatal(err)
					}
				}
				settle(t, e)
				lost := e.Stats().TombstonesLost
				for w := range workers {
					for i := range keys {
						k := []byte(fmt.Sprintf("w%d-k%d", w, i))
						v, ok := e.Get(k, nil)
						st := models[w][i]
						if ok && (!st.present || !bytes.Equal(v, st.val)) {
							ver, _ := checkWhole(k, v)
							t.Errorf("live: %s: got version %d, newest %d present %v", k, ver, st.ver, st.present)
						}
					}
				}
				if s := e.Stats(); true {
					t.Logf("stats: writeFailed %d tombsLost %d reins %d superseded %d direct %d", s.WriteFailed, s.TombstonesLost, s.Reinsertions, s.Superseded, s.CopiedDirect)
				}
				closeT(t, e)
				for pass := range 2 {
					o2 := o // pass 0 loads the checkpoint (if its write did not fail)
					if pass == 1 {
						dropCheckpoint(t, mem)
						o2.Recovery = RecoveryStrict // scans whatever the checkpoint
					}
					e2 := openT(t, mem, o2)
					for w := range workers {
						for i := range keys {
							k := []byte(fmt.Sprintf("w%d-k%d", w, i))
							v, ok := e2.Get(k, nil)
							st := models[w][i]
							if ok && (!st.present || !bytes.Equal(v, st.val)) && lost == 0 {
								ver, _ := checkWhole(k, v)
								t.Errorf("pass %d: %s: got version %d after reopen, newest %d present %v", pass, k, ver, st.ver, st.present)
							}
						}
					}
					closeT(t, e2)
				}
			})
		}
	}
}

// TestReopenEmptiestShadowedCopy: the emptiest picker reclaims a region
// before an older one that holds an older copy of one of its keys. Region
// A holds v1 of k and much else; region B holds v2 of k and little else,
// sealed early by a failed write; reclaiming B first drops v2. Neither
// the running engine nor a reopen (from the checkpoint, then by scan) may
// serve v1 after that: a hit must be v2. With Reinsertion and k read
// since its write, v2 is rewritten instead and must still be served.
func TestReopenEmptiestShadowedCopy(t *testing.T) {
	for _, reinsert := range []bool{false, true} {
		t.Run(fmt.Sprintf("reinsertion=%v", reinsert), func(t *testing.T) {
			o := testOpts()
			o.Flushers, o.CleanRegions, o.Picker, o.Reinsertion = 1, 2, PickerEmptiest, reinsert
			o.Runtime = RuntimeDisabled
			mem := newMem(t, 1024+4<<20) // four regions: the third one acquired starts a reclaim
			dev := blockdev.NewFaulty(mem, 1)
			e := openT(t, dev, o)
			k := []byte("shadowed")
			v1, v2 := mval(k, 1, 300), mval(k, 2, 300)
			if !e.Insert(k, v1, time.Time{}) {
				t.Fatal("insert v1 refused")
			}
			settle(t, e)
			at, _ := e.ix.get(xxhash.Sum64(k))
			regionA, _, _ := e.lay.unpack(at)
			for i := 0; e.Stats().SealedRegions == 0; i++ { // fill region A
				insertAll(t, e, fmt.Sprintf("a%d-", i), 1, 1, 30<<10)
				if i > 100 {
					t.Fatal("region A never sealed")
				}
			}
			if !e.Insert(k, v2, time.Time{}) { // into region B
				t.Fatal("insert v2 refused")
			}
			settle(t, e)
			if reinsert {
				e.Get(k, nil) // marks it accessed
			}
			// The next write fails: B is abandoned and sealed holding v2,
			// the failed entry's tombstone goes to a third region, whose
			// acquisition leaves one clean region: the reclaimer takes B,
			// the emptiest.
			dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Fail, Nth: 1})
			e.Insert([]byte("doomed"), mval([]byte("doomed"), 1, 300), time.Time{})
			settle(t, e)
			waitReclaims(t, e, 1)
			settle(t, e)
			s := e.Stats()
			if s.WriteFailed != 1 || s.Reclaims != 1 || s.SealedRegions != 1 || e.regions.regions[regionA].state.Load() != regionSealed {
				t.Fatalf("scenario not built: write failed %d, reclaims %d, sealed %d, region A reclaimed first",
					s.WriteFailed, s.Reclaims, s.SealedRegions)
			}
			if reinsert && s.Reinsertions != 1 {
				t.Fatalf("reinsertions %d, want 1", s.Reinsertions)
			}
			t.Logf("evictions %d, shadow tombstones %d, reinsertions %d", s.Evictions, s.ShadowTombstones, s.Reinsertions)
			check := func(e *Engine, when string) {
				t.Helper()
				v, ok := e.Get(k, nil)
				ver, _ := checkWhole(k, v)
				switch {
				case ok && ver != 2:
					t.Fatalf("%s: version %d served, newest is 2", when, ver)
				case reinsert && !ok:
					t.Fatalf("%s: reinserted v2 lost", when)
				}
			}
			check(e, "running")
			closeT(t, e)
			e = openT(t, mem, o)
			if e.Stats().RecoveredBatches != 0 {
				t.Fatal("checkpoint not used")
			}
			check(e, "reopened from the checkpoint")
			closeT(t, e)
			dropCheckpoint(t, mem)
			e = openT(t, mem, o)
			if e.Stats().RecoveredBatches == 0 {
				t.Fatal("regions not scanned")
			}
			check(e, "reopened by scan")
			closeT(t, e)
		})
	}
}

// waitReclaims waits until e has reclaimed n regions.
func waitReclaims(t *testing.T, e *Engine, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().Reclaims < n {
		if time.Now().After(deadline) {
			t.Fatalf("reclaims %d, want %d", e.Stats().Reclaims, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestPickOldest: pick reports whether its victim is the oldest sealed
// region; with fifo set (Close has shut the gate) the emptiest picker
// takes the oldest too.
func TestPickOldest(t *testing.T) {
	for _, tc := range []struct {
		picker     PickerMode
		fifo       bool
		want       uint32
		wantOldest bool
	}{
		{PickerEmptiest, false, 2, false},
		{PickerEmptiest, true, 1, true},
		{PickerFIFO, false, 1, true},
	} {
		rs := newRegions(4, tc.picker, 1, 1)
		for id, live := range map[uint32]int64{1: 900, 2: 10, 3: 500} {
			rs.regions[id].live.Store(live)
		}
		rs.sealed = []uint32{1, 2, 3}
		id, _, oldest, ok := rs.pick(tc.fifo)
		if !ok || id != tc.want || oldest != tc.wantOldest {
			t.Errorf("%s fifo=%v: region %d oldest %v, want %d %v", tc.picker, tc.fifo, id, oldest, tc.want, tc.wantOldest)
		}
	}
}

type reopenState struct {
	ver     uint64
	present bool
	val     []byte
}

func reopenWorker(e *Engine, w, keys, ops int, seed uint64) ([]reopenState, error) {
	rng := rand.New(rand.NewPCG(uint64(w), 7+seed))
	model := make([]reopenState, keys)
	var buf []byte
	for op := range ops {
		i := rng.IntN(keys)
		k := []byte(fmt.Sprintf("w%d-k%d", w, i))
		switch r := rng.IntN(10); {
		case r < 5:
			if rng.IntN(4) == 0 {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
			}
			ver := uint64(op + 1)
			v := mval(k, ver, rng.IntN(9000))
			var ok bool
			if rng.IntN(2) == 0 {
				ok = e.Insert(k, v, time.Time{})
			} else {
				ok = e.InsertFromLater(k, len(v), time.Time{}, func(d []byte) int { return copy(d, v) })
				e.Kick()
			}
			model[i] = reopenState{ver: ver, present: ok, val: v}
		case r < 6:
			e.Remove(k)
			model[i] = reopenState{}
		default:
			got, ok := e.Get(k, buf[:0])
			buf = got
			if ok && (!model[i].present || !bytes.Equal(got, model[i].val)) {
				ver, _ := checkWhole(k, got)
				return model, fmt.Errorf("%s: got version %d, want %d (present %v)", k, ver, model[i].ver, model[i].present)
			}
		}
	}
	return model, nil
}

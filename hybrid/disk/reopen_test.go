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

	"strata/blockdev"
)

// TestReopenNewestUnderWriteFaults: random inserts and removes from many
// goroutines while 3% of writes fail (except reclaim's one-block header
// zeroing), then a clean Close and two reopens (checkpoint, then scan):
// every hit must be the key's newest accepted value, as the engine
// promises unless a tombstone was given up (TombstonesLost). It fails on
// main (9026100) as on copy12, in the unified/emptiest/reinsertion
// variant, a few runs in ten when the machine is loaded (several copies of
// the test binary at once): an older version comes back after restart.
// Not fixed yet, so it runs only with STRATA_REPRO_REOPEN=1
// (STRATA_REPRO_ROUNDS sets the rounds, default 3).
func TestReopenNewestUnderWriteFaults(t *testing.T) {
	if os.Getenv("STRATA_REPRO_REOPEN") == "" {
		t.Skip("reproduces an open defect: set STRATA_REPRO_REOPEN=1")
	}
	rounds := 3
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
					if pass == 1 {
						dropCheckpoint(t, mem)
					}
					o2 := o
					o2.Recovery = RecoveryStrict
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

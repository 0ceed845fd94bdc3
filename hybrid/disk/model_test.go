package disk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// mval is a self-describing value: version and length up front, then bytes
// derived from key and version, so any hit can be checked for being whole
// and belonging to its key.
func mval(key []byte, version uint64, n int) []byte {
	n = max(n, 16)
	v := make([]byte, n)
	binary.LittleEndian.PutUint64(v, version)
	binary.LittleEndian.PutUint64(v[8:], uint64(n))
	seed := version*0x9e3779b97f4a7c15 + uint64(len(key))
	for _, c := range key {
		seed = seed*31 + uint64(c)
	}
	for i := 16; i < n; i++ {
		seed = seed*6364136223846793005 + 1442695040888963407
		v[i] = byte(seed >> 56)
	}
	return v
}

// checkWhole reports whether v is a value mval produced for key.
func checkWhole(key, v []byte) (uint64, bool) {
	if len(v) < 16 || binary.LittleEndian.Uint64(v[8:]) != uint64(len(v)) {
		return 0, false
	}
	ver := binary.LittleEndian.Uint64(v)
	return ver, bytes.Equal(v, mval(key, ver, len(v)))
}

// TestModel runs random inserts, gets and removes from many
// goroutines beside a plain map. Each goroutine owns its keys, so for them
// "newest" is well defined: a hit must return exactly the newest value,
// and a removed or refused key must miss. Reads of other goroutines' keys
// must return a whole value of that key. Misses are always legal (drops,
// evictions). A small device forces reclaim throughout.
func TestModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
	}{
		{"fifo-separated", func(o *Options) {}},
		{"emptiest-reinsert-unified", func(o *Options) {
			o.Picker, o.Reinsertion, o.Runtime = PickerEmptiest, true, RuntimeUnified
		}},
		{"disabled-delay", func(o *Options) { o.Runtime, o.FlushDelay = RuntimeDisabled, time.Millisecond }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOpts()
			o.QueueBytes = 256 << 10
			tc.edit(&o)
			dev := newMem(t, 1024+5<<20) // 5 regions: reclaim all the time
			e := openT(t, dev, o)
			const workers, keys = 8, 40
			ops := 2500
			if testing.Short() || raceEnabled {
				ops = 800
			}
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- modelWorker(e, w, workers, keys, ops)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			s := e.Stats()
			t.Logf("stats: hits=%d pendingHits=%d gets=%d reclaims=%d evictions=%d reinsertions=%d dropQueue=%d superseded=%d",
				s.Hits, s.PendingHits, s.Gets, s.Reclaims, s.Evictions, s.Reinsertions, s.DropQueue, s.Superseded)
			if s.Corruptions != 0 || s.Hits == 0 || s.Reclaims == 0 {
				t.Fatalf("stats %+v", s)
			}
			closeT(t, e)
			e = openT(t, dev.CrashClone(), o)
			defer closeT(t, e)
			for w := range workers {
				for i := range keys {
					k := []byte(fmt.Sprintf("w%d-k%d", w, i))
					if v, ok := e.Get(k, nil); ok {
						if _, whole := checkWhole(k, v); !whole {
							t.Fatalf("after reopen %s: not a value of this key", k)
						}
					}
				}
			}
		})
	}
}

func modelWorker(e *Engine, w, workers, keys, ops int) error {
	rng := rand.New(rand.NewPCG(uint64(w), 42))
	type state struct {
		ver     uint64
		present bool
		val     []byte
	}
	model := make([]state, keys)
	var buf []byte
	// held is a value lent by Lend and kept over the next operations
	// (inserts, removes, reclaim of its region): it must not change.
	var held Value
	var heldWant []byte
	defer held.Release()
	for op := range ops {
		i := rng.IntN(keys)
		k := []byte(fmt.Sprintf("w%d-k%d", w, i))
		switch r := rng.IntN(10); {
		case r < 4:
			for e.queued.Load() > e.opts.QueueBytes/2 && rng.IntN(8) != 0 {
				time.Sleep(20 * time.Microsecond) // mostly keep up; sometimes overflow
			}
			ver := uint64(op + 1)
			v := mval(k, ver, rng.IntN(6000))
			ok := e.Insert(k, v, time.Time{})
			model[i] = state{ver: ver, present: ok, val: v}
		case r < 5:
			e.Remove(k)
			model[i] = state{}
		case r < 8:
			var got []byte
			var ok bool
			if rng.IntN(2) == 0 {
				got, ok = e.Get(k, buf[:0])
				buf = got
			} else {
				if !bytes.Equal(held.Bytes(), heldWant) {
					return fmt.Errorf("a lent value changed while held")
				}
				_, ok = e.Lend(k, &held)
				got = held.Bytes()
				heldWant = append(heldWant[:0], got...)
			}
			if ok && !model[i].present {
				return fmt.Errorf("%s: hit on a removed or refused key", k)
			}
			if ok && !bytes.Equal(got, model[i].val) {
				ver, _ := checkWhole(k, got)
				return fmt.Errorf("%s: got version %d, want %d", k, ver, model[i].ver)
			}
		default:
			ok2 := fmt.Sprintf("w%d-k%d", rng.IntN(workers), rng.IntN(keys))
			if got, ok := e.Get([]byte(ok2), nil); ok {
				if _, whole := checkWhole([]byte(ok2), got); !whole {
					return fmt.Errorf("%s: foreign read not whole", ok2)
				}
			}
		}
	}
	if !bytes.Equal(held.Bytes(), heldWant) {
		return fmt.Errorf("a lent value changed while held")
	}
	return nil
}

package disk

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
)

// Tests with blockdev.Faulty: failed, torn and bit-flipped I/O. In each,
// every hit must be exactly the newest value of its key; what cannot be
// served must be a miss, counted.

func newFaulty(t *testing.T, size int64) (*blockdev.Faulty, *blockdev.MemDevice) {
	t.Helper()
	mem := newMem(t, size)
	return blockdev.NewFaulty(mem, 1), mem
}

func keyN(p string, i int) []byte { return []byte(fmt.Sprintf("%s%d", p, i)) }

// insertAll inserts p0..p(n-1) with version ver and waits until written.
func insertAll(t *testing.T, e *Engine, p string, n int, ver uint64, size int) {
	t.Helper()
	for i := range n {
		k := keyN(p, i)
		if !e.Insert(k, mval(k, ver, size), time.Time{}) {
			t.Fatalf("insert %s dropped", k)
		}
	}
	settle(t, e)
}

// expect checks p0..p(n-1): each is a hit of version ver (ver 0: a miss).
func expect(t *testing.T, e *Engine, p string, n int, ver uint64) {
	t.Helper()
	for i := range n {
		k := keyN(p, i)
		v, ok := e.Get(k, nil)
		got, whole := checkWhole(k, v)
		switch {
		case ok && (!whole || got != ver):
			t.Fatalf("%s: wrong value (version %d, whole %v), want version %d", k, got, whole, ver)
		case ok != (ver != 0):
			t.Fatalf("%s: hit=%v, want version %d", k, ok, ver)
		}
	}
}

// TestFaultWriteFails: a write that fails loses its entries (counted),
// hides their keys at once and, through tombstones, after a restart too;
// the engine keeps working. One flusher, so the failed write holds both
// the overwrite and the new key.
func TestFaultWriteFails(t *testing.T) {
	dev, mem := newFaulty(t, 16<<20)
	o := testOpts()
	o.Flushers = 1
	e := openT(t, dev, o)
	insertAll(t, e, "old", 10, 1, 300)
	dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Fail, Nth: 1})
	// Both entries must reach the flusher before it wakes: deferred
	// wake-ups (as the memory tier's eviction hook uses), then one Kick.
	for _, k := range [][]byte{keyN("old", 3), keyN("new", 0)} {
		v := mval(k, 2, 300)
		e.InsertFromLater(k, len(v), time.Time{}, func(dst []byte) int { return copy(dst, v) })
	}
	e.Kick()
	settle(t, e)
	s := e.Stats()
	if s.WriteFailed != 2 || s.IOErrors != 1 || dev.Fired() != 1 {
		t.Fatalf("write failed %d, io errors %d, fired %d", s.WriteFailed, s.IOErrors, dev.Fired())
	}
	check := func(e *Engine) {
		t.Helper()
		for i := range 10 {
			k := keyN("old", i)
			v, ok := e.Get(k, nil)
			ver, whole := checkWhole(k, v)
			if i == 3 && ok {
				t.Fatalf("old3: version %d served after its overwrite failed", ver)
			}
			if i != 3 && (!ok || !whole || ver != 1) {
				t.Fatalf("%s lost or wrong", k)
			}
		}
		if _, ok := e.Get(keyN("new", 0), nil); ok {
			t.Fatal("new0 served though its write failed")
		}
	}
	check(e)
	closeT(t, e)
	e = openT(t, mem.CrashClone(), testOpts()) // tombstones keep old3 gone
	check(e)
	insertAll(t, e, "old", 4, 3, 500) // and the engine works on
	expect(t, e, "old", 4, 3)
	closeT(t, e)
}

// TestFaultDeviceDown: every write fails for a while. Everything inserted
// meanwhile is lost and counted, retried tombstones are given up and
// counted, nothing wrong is served, and once the device is back the
// engine works again.
func TestFaultDeviceDown(t *testing.T) {
	dev, _ := newFaulty(t, 16<<20)
	e := openT(t, dev, testOpts())
	defer closeT(t, e)
	insertAll(t, e, "a", 20, 1, 200)
	id := dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Fail})
	insertAll(t, e, "a", 20, 2, 200)
	s := e.Stats()
	if s.WriteFailed < 20 || s.TombstonesLost == 0 {
		t.Fatalf("write failed %d, tombstones lost %d", s.WriteFailed, s.TombstonesLost)
	}
	expect(t, e, "a", 20, 0)
	dev.Remove(id)
	insertAll(t, e, "a", 20, 3, 200)
	expect(t, e, "a", 20, 3)
}

// TestFaultTornWrite tears a batch write after every possible number of
// blocks, with nothing written after it (as in a crash), and reopens in
// quiet and strict mode: the earlier batch is served whole, the torn one
// never, and strict does not take a torn tail for corruption.
func TestFaultTornWrite(t *testing.T) {
	o := testOpts()
	o.Flushers, o.FlushDelay = 1, time.Hour // one batch per Close
	blocks := tornRun(t, o, -1)
	if blocks < 4 {
		t.Fatalf("batch of %d blocks", blocks)
	}
	for keep := range blocks {
		tornRun(t, o, keep)
	}
}

// tornRun writes batch a, then batch b torn after keep blocks (keep < 0:
// not torn; it returns the blocks of b's write), and checks the reopened
// device in both recovery modes.
func tornRun(t *testing.T, o Options, keep int) int {
	t.Helper()
	dev, mem := newFaulty(t, 8<<20)
	e := openT(t, dev, o)
	for i := range 8 {
		k := keyN("a", i)
		e.Insert(k, mval(k, 1, 700), time.Time{})
	}
	closeT(t, e) // batch a written here
	e = openT(t, dev, o)
	before := mem.Stats()
	if keep >= 0 {
		dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Tear, Nth: 1, Keep: keep})
		dev.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Fail, After: 1})
	}
	for i := range 8 {
		k := keyN("b", i)
		e.Insert(k, mval(k, 1, 700), time.Time{})
	}
	closeT(t, e) // batch b written (or torn) here
	written := mem.Stats()
	for _, mode := range []RecoveryMode{RecoveryQuiet, RecoveryStrict} {
		ro := o
		ro.Recovery = mode
		r, err := Open(mem.CrashClone(), ro)
		if err != nil {
			t.Fatalf("keep %d, %s: %v", keep, mode, err)
		}
		expect(t, r, "a", 8, 1)
		if keep >= 0 {
			expect(t, r, "b", 8, 0)
		} else {
			expect(t, r, "b", 8, 1)
		}
		if s := r.Stats(); s.RecoveryTornTails > 1 || s.Corruptions != 0 {
			t.Fatalf("keep %d, %s: torn tails %d, corruptions %d", keep, mode, s.RecoveryTornTails, s.Corruptions)
		}
		closeT(t, r)
	}
	return int(written.WriteBytes-before.WriteBytes) / mem.BlockSize()
}

// TestFaultFlipOnRead flips bits in what reads return: a flip inside the
// entry is a miss and a corruption (the index entry is dropped); a flip in
// a neighbour's bytes leaves the hit exact. Never wrong bytes.
func TestFaultFlipOnRead(t *testing.T) {
	for _, mode := range []RuntimeMode{RuntimeDisabled, RuntimeSeparated} {
		t.Run(string(mode), func(t *testing.T) {
			dev, _ := newFaulty(t, 16<<20)
			o := testOpts()
			o.Runtime = mode
			e := openT(t, dev, o)
			defer closeT(t, e)
			const n = 200
			insertAll(t, e, "f", n, 1, 300)
			// A targeted flip first: a byte of f7's value.
			v, _ := e.ix.get(xxhash.Sum64String("f7"))
			r, off, _ := e.lay.unpack(v)
			at := e.lay.regionBase(r) + int64(off) + entryHeaderSize + 10
			id := dev.Inject(blockdev.Fault{Op: blockdev.OpRead, Action: blockdev.Flip, FlipAt: []int64{at}})
			if _, ok := e.Get(keyN("f", 7), nil); ok || e.Stats().Corruptions != 1 {
				t.Fatalf("flipped entry served or not counted: corruptions %d", e.Stats().Corruptions)
			}
			dev.Remove(id)
			dev.Inject(blockdev.Fault{Op: blockdev.OpRead, Action: blockdev.Flip}) // one random bit per read
			misses := 0
			for i := range n {
				k := keyN("f", i)
				v, ok := e.Get(k, nil)
				if !ok {
					misses++
					continue
				}
				if ver, whole := checkWhole(k, v); !whole || ver != 1 {
					t.Fatalf("%s: wrong bytes served", k)
				}
			}
			s := e.Stats()
			if misses == 0 || uint64(misses) != s.Corruptions || s.Entries != n-misses {
				t.Fatalf("misses %d, corruptions %d, entries %d", misses, s.Corruptions, s.Entries)
			}
		})
	}
}

// TestFaultReadFails: a failed read is a miss and an I/O error; the entry
// stays indexed and is served once reads work again.
func TestFaultReadFails(t *testing.T) {
	dev, _ := newFaulty(t, 16<<20)
	e := openT(t, dev, testOpts())
	defer closeT(t, e)
	insertAll(t, e, "r", 10, 1, 300)
	id := dev.Inject(blockdev.Fault{Op: blockdev.OpRead, Action: blockdev.Fail})
	expect(t, e, "r", 10, 0)
	if s := e.Stats(); s.IOErrors != 10 || s.Corruptions != 0 || s.Entries != 10 {
		t.Fatalf("io errors %d, corruptions %d, entries %d", s.IOErrors, s.Corruptions, s.Entries)
	}
	dev.Remove(id)
	expect(t, e, "r", 10, 1)
}

// TestFaultSyncFails: Close reports a failed sync.
func TestFaultSyncFails(t *testing.T) {
	dev, _ := newFaulty(t, 16<<20)
	e := openT(t, dev, testOpts())
	insertAll(t, e, "s", 5, 1, 300)
	dev.Inject(blockdev.Fault{Op: blockdev.OpSync, Action: blockdev.Fail})
	err := e.Close(context.Background())
	if !errors.Is(err, blockdev.ErrInjected) {
		t.Fatalf("close: %v", err)
	}
}

package disk

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
)

// Tests of the disk read deadline and of Close on a device that does not
// answer, with blockdev.Faulty's Hang.

// waitFor polls cond every millisecond for at most 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitStopped waits until every goroutine the engine started has ended,
// also those a Close that gave up left behind.
func waitStopped(t *testing.T, e *Engine) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		e.flushWG.Wait()
		e.wg.Wait()
		e.rt.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("engine goroutines still running 5s after the device answered again")
	}
}

// faultAfter opens an engine with o on a Faulty device (closed at
// cleanup), writes entries p0..p(n-1), then injects f.
func faultAfter(t *testing.T, o Options, p string, n int, f blockdev.Fault) (*Engine, *blockdev.Faulty, *blockdev.MemDevice, blockdev.FaultID) {
	t.Helper()
	dev, mem := newFaulty(t, 16<<20)
	e := openT(t, dev, o)
	t.Cleanup(func() { closeT(t, e) })
	insertAll(t, e, p, n, 1, 300)
	return e, dev, mem, dev.Inject(f)
}

// hangReads holds every read until removed.
var hangReads = blockdev.Fault{Op: blockdev.OpRead, Action: blockdev.Hang}

// TestReadTimeoutIsMiss: with the device hung, a Get is a miss within the
// read deadline, in both pool modes; the read is counted, its job is held
// by the worker until the device answers, then let go, and the entry is
// served again.
func TestReadTimeoutIsMiss(t *testing.T) {
	for _, mode := range []RuntimeMode{RuntimeUnified, RuntimeSeparated, RuntimeUring} {
		t.Run(string(mode), func(t *testing.T) {
			o := testOpts()
			o.Runtime, o.ReadTimeout = mode, 50*time.Millisecond
			e, dev, _, id := faultAfter(t, o, "t", 4, hangReads)
			t0 := time.Now()
			if _, ok := e.Get(keyN("t", 0), nil); ok {
				t.Fatal("hit from a hung device")
			}
			if took := time.Since(t0); took < o.ReadTimeout || took > o.ReadTimeout+time.Second {
				t.Fatalf("miss after %v, want about %v", took, o.ReadTimeout)
			}
			if s := e.Stats(); s.ReadTimeouts != 1 || s.AbandonedReads != 1 || dev.Hanging() != 1 {
				t.Fatalf("timeouts %d, abandoned %d, hanging %d; want 1, 1, 1", s.ReadTimeouts, s.AbandonedReads, dev.Hanging())
			}
			dev.Remove(id)
			waitFor(t, "the abandoned read to be let go", func() bool { return e.Stats().AbandonedReads == 0 })
			expect(t, e, "t", 4, 1)
		})
	}
}

// TestReadTimeoutSkipsQueued: reads whose Gets left while they waited in
// the queue are never issued; the ones already in the device complete and
// are let go. No Get waits longer than the deadline.
func TestReadTimeoutSkipsQueued(t *testing.T) {
	o := testOpts()
	o.ReadTimeout = 50 * time.Millisecond
	const gets = 10 // 4 workers: 6 wait in the queue
	e, dev, mem, id := faultAfter(t, o, "q", gets, hangReads)
	reads := mem.Stats().Reads
	var wg sync.WaitGroup
	for i := range gets {
		wg.Go(func() {
			t0 := time.Now()
			if _, ok := e.Get(keyN("q", i), nil); ok || time.Since(t0) > o.ReadTimeout+time.Second {
				t.Errorf("get %d: hit %v after %v", i, ok, time.Since(t0))
			}
		})
	}
	wg.Wait()
	// Workers that were not yet in the device when their Gets left skip
	// those reads too: only the reads held in the device ever complete.
	hung := dev.Hanging()
	if s := e.Stats(); s.ReadTimeouts != gets || s.AbandonedReads != gets || hung == 0 || hung > o.ReadWorkers {
		t.Fatalf("timeouts %d, abandoned %d, hanging %d", s.ReadTimeouts, s.AbandonedReads, hung)
	}
	dev.Remove(id)
	waitFor(t, "abandoned reads to be let go", func() bool { return e.Stats().AbandonedReads == 0 })
	if n := mem.Stats().Reads - reads; n != uint64(hung) {
		t.Fatalf("%d device reads after release, want %d (the queued ones skipped)", n, hung)
	}
}

// TestReadTimeoutNeverWritesDst: the caller's buffer is its own again the
// moment Get returns, even when the read completes later. The worker must
// not append into it (run with -race: a late write is a data race as well
// as a changed byte).
func TestReadTimeoutNeverWritesDst(t *testing.T) {
	o := testOpts()
	o.ReadTimeout = 20 * time.Millisecond
	e, dev, _, id := faultAfter(t, o, "d", 1, hangReads)
	dst := make([]byte, 0, 4096) // room: an append would land in it
	if _, ok := e.Get(keyN("d", 0), dst); ok {
		t.Fatal("hit from a hung device")
	}
	mine := dst[:cap(dst)]
	for i := range mine {
		mine[i] = 0xA5
	}
	dev.Remove(id)
	waitFor(t, "the abandoned read to be let go", func() bool { return e.Stats().AbandonedReads == 0 })
	for i, b := range mine {
		if b != 0xA5 {
			t.Fatalf("the caller's buffer was written after Get returned (byte %d)", i)
		}
	}
}

// slowDev answers half the reads at once and delays the others by 4-6 ms,
// around a 5 ms deadline.
type slowDev struct {
	blockdev.Device
	mu  sync.Mutex
	rng *rand.Rand
}

func (d *slowDev) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	wait := time.Duration(4000+d.rng.IntN(2000)) * time.Microsecond
	fast := d.rng.IntN(2) == 0
	d.mu.Unlock()
	if !fast {
		time.Sleep(wait)
	}
	return d.Device.ReadAt(p, off)
}

// TestReadTimeoutRace: Gets whose reads finish right around the deadline,
// each followed by the caller overwriting its buffer: every hit is the
// exact value, and no worker writes into a buffer its Get has left (the
// race detector watches the hand-over). Half the goroutines Lend instead:
// a lent buffer is the exact value, and every read buffer, lent or left
// behind by a timed-out Lend, goes back to the pool once (closeT).
func TestReadTimeoutRace(t *testing.T) {
	dev := &slowDev{Device: newMem(t, 16<<20), rng: rand.New(rand.NewPCG(1, 2))}
	o := testOpts()
	o.ReadTimeout = 5 * time.Millisecond
	e := openT(t, dev, o)
	defer closeT(t, e)
	insertAll(t, e, "r", 16, 1, 300)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			dst := make([]byte, 0, 4096)
			var lent Value
			defer lent.Release()
			for i := range 100 {
				k := keyN("r", (g+i)%16)
				if g%2 == 1 {
					_, ok := e.Lend(k, &lent)
					if ver, whole := checkWhole(k, lent.Bytes()); ok && (!whole || ver != 1) {
						t.Errorf("%s: wrong bytes lent", k)
					}
					continue
				}
				v, ok := e.Get(k, dst[:0])
				if ver, whole := checkWhole(k, v); ok && (!whole || ver != 1) {
					t.Errorf("%s: wrong bytes", k)
				}
				clear(dst[:cap(dst)])
			}
		})
	}
	wg.Wait()
	waitFor(t, "abandoned reads to be let go", func() bool { return e.Stats().AbandonedReads == 0 })
	if s := e.Stats(); s.ReadTimeouts == 0 || s.Hits == 0 {
		t.Fatalf("timeouts %d, hits %d: the race was not exercised both ways", s.ReadTimeouts, s.Hits)
	}
}

// TestCloseDeviceHung: a device whose writes and syncs never return holds
// Close no longer than its ctx and the grace; Close says the device did
// not answer, and once it answers again every goroutine ends.
func TestCloseDeviceHung(t *testing.T) {
	dev, _ := newFaulty(t, 16<<20)
	e := openT(t, dev, testOpts())
	dev.Inject(blockdev.Fault{Op: blockdev.OpWrite | blockdev.OpSync, Action: blockdev.Hang})
	e.Insert([]byte("k"), []byte("v"), time.Time{})
	waitFor(t, "the flush write to hang", func() bool { return dev.Hanging() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := e.Close(ctx)
	if took := time.Since(t0); took > 50*time.Millisecond+closeGrace+time.Second {
		t.Fatalf("Close took %v", took)
	}
	if !errors.Is(err, ErrDeviceTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want ErrDeviceTimeout and the deadline", err)
	}
	dev.Clear()
	waitStopped(t, e)
}

// TestCloseReclaimerWaitsForHungReader: a reclaimer waiting for a Get's
// read of its victim (hung in the device) does not hold Close past its
// deadline.
func TestCloseReclaimerWaitsForHungReader(t *testing.T) {
	dev, _ := newFaulty(t, 8<<20)
	o := testOpts()
	o.ReadTimeout = 20 * time.Millisecond
	e := openT(t, dev, o)
	insertAll(t, e, "v", 1, 1, 300)
	v, _ := e.ix.get(xxhash.Sum64String("v0"))
	r, off, length := e.lay.unpack(v)
	abs := e.lay.regionBase(r) + int64(off)
	rs := alignDown(abs, e.lay.blockSize)
	n := int(alignUp(abs+int64(length), e.lay.blockSize) - rs)
	// The Get's read only: the reclaimer's scan of the region reads more.
	dev.Inject(blockdev.Fault{Op: blockdev.OpRead, Action: blockdev.Hang,
		Match: func(o int64, l int) bool { return o == rs && l == n }})
	if _, ok := e.Get(keyN("v", 0), nil); ok {
		t.Fatal("hit from a hung read")
	}
	reg := &e.regions.regions[r]
	for i := 0; reg.state.Load() != regionReclaiming; i++ { // write until r is the victim
		e.Insert(keyN("fill", i), make([]byte, 32<<10), time.Time{})
		if i > 100000 {
			t.Fatal("region never picked for reclaim")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := e.Close(ctx); !errors.Is(err, ErrDeviceTimeout) {
		t.Fatalf("Close: %v, want ErrDeviceTimeout", err)
	}
	if took := time.Since(t0); took > 50*time.Millisecond+closeGrace+time.Second {
		t.Fatalf("Close took %v", took)
	}
	dev.Clear()
	waitStopped(t, e)
}

// steadyDev answers every read after d: slow, never stuck.
type steadyDev struct {
	blockdev.Device
	d time.Duration
}

func (s *steadyDev) ReadAt(p []byte, off int64) (int, error) {
	time.Sleep(s.d)
	return s.Device.ReadAt(p, off)
}

// TestQueuedTimeoutsKeepDiskInService: reads that time out waiting behind
// other reads of a device that answers each in 5 ms (one worker, 100
// reads: the last wait half a second) are misses, but not the device's
// failures: it stays in service. The margin is wide (a read would have
// to take 100 ms to count) so that a loaded machine does not make a
// quick read look stuck. A device that holds a read past the deadline
// (hung) is taken out with the same limits.
func TestQueuedTimeoutsKeepDiskInService(t *testing.T) {
	o := testOpts()
	o.ReadTimeout, o.ErrorLimit, o.ErrorWindow = 200*time.Millisecond, 3, time.Minute
	o.ReadWorkers, o.ReadQueue = 1, 128
	dev := &steadyDev{Device: newMem(t, 16<<20)}
	e := openT(t, dev, o)
	defer closeT(t, e)
	insertAll(t, e, "s", 8, 1, 300)
	dev.d = 5 * time.Millisecond
	var wg sync.WaitGroup
	for g := range 100 {
		wg.Go(func() { e.Get(keyN("s", g%8), nil) })
	}
	wg.Wait()
	s := e.Stats()
	if s.ReadTimeouts <= uint64(o.ErrorLimit) || s.OutOfService != 0 || e.health.down() {
		t.Fatalf("timeouts %d, out of service %d (down %v): want more timeouts than ErrorLimit, none held against the device",
			s.ReadTimeouts, s.OutOfService, e.health.down())
	}
	waitFor(t, "abandoned reads to be let go", func() bool { return e.Stats().AbandonedReads == 0 })

	hung, hdev, _, id := faultAfter(t, o, "h", 4, hangReads)
	t.Cleanup(func() { hdev.Remove(id) }) // before faultAfter's Close
	for i := 0; !hung.health.down(); i++ {
		if i == 100 {
			t.Fatal("a hung device was not taken out of service after 100 timed-out reads")
		}
		hung.Get(keyN("h", i%4), nil)
	}
}

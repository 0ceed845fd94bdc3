package disk

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/blockdev"
)

// ringGate is a device that offers a ring (UseRing succeeds, reads stay
// the MemDevice's) and, once armed, holds every read until open is
// closed, counting the reads and read-buffer bytes (the pool's class of
// each read) that it holds at once.
type ringGate struct {
	blockdev.Device
	armed atomic.Bool
	open  chan struct{}

	mu                         sync.Mutex
	n, peakN, bytes, peakBytes int
}

func newRingGate(t *testing.T) *ringGate {
	return &ringGate{Device: newMem(t, 16<<20), open: make(chan struct{})}
}

func (g *ringGate) UseRing(int) error { return nil }

func (g *ringGate) ReadAt(p []byte, off int64) (int, error) {
	if !g.armed.Load() {
		return g.Device.ReadAt(p, off)
	}
	bp := bufPool{bs: g.BlockSize()}
	size := bp.size(bp.class(len(p)))
	g.add(1, size)
	defer g.add(-1, -size)
	<-g.open
	return g.Device.ReadAt(p, off)
}

func (g *ringGate) add(n, size int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += n
	g.bytes += size
	g.peakN = max(g.peakN, g.n)
	g.peakBytes = max(g.peakBytes, g.bytes)
}

func (g *ringGate) held() (n, peakN, peakBytes int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n, g.peakN, g.peakBytes
}

// getAll Gets keys p0..p(n-1) at once, each in its own goroutine, and
// returns a wait that fails t on a miss or a wrong value.
func getAll(t *testing.T, e *Engine, p string, n, vlen int) (wait func()) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k := keyN(p, i)
			if got, ok := e.Get(k, nil); !ok || !bytes.Equal(got, mval(k, 1, vlen)) {
				t.Errorf("%s: ok=%v, len %d", k, ok, len(got))
			}
		})
	}
	return wg.Wait
}

// TestRingReadsBeyondReadWorkers: with a ring, small reads are in flight
// on the device many more at once than ReadWorkers (all 24 Gets here, 2
// workers), as the read-buffer bytes allow; without one (separated, or
// a device with no ring) ReadWorkers bound them, the rest queued.
func TestRingReadsBeyondReadWorkers(t *testing.T) {
	const n, vlen = 24, 1000
	for _, tc := range []struct {
		mode           RuntimeMode
		inDev, inQueue int
	}{
		{RuntimeUring, n, 0},
		{RuntimeSeparated, 2, n - 2},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			g := newRingGate(t)
			o := testOpts()
			o.Runtime, o.ReadWorkers = tc.mode, 2
			e := openT(t, g, o)
			insertAll(t, e, "c", n, 1, vlen)
			settle(t, e)
			g.armed.Store(true)
			wait := getAll(t, e, "c", n, vlen)
			waitFor(t, fmt.Sprintf("%d reads on the device, %d queued", tc.inDev, tc.inQueue), func() bool {
				inDev, _, _ := g.held()
				return inDev == tc.inDev && len(e.rt.reads) == tc.inQueue
			})
			close(g.open)
			wait()
			if _, peak, _ := g.held(); peak != tc.inDev {
				t.Errorf("peak reads on the device %d, want %d", peak, tc.inDev)
			}
			closeT(t, e)
		})
	}
}

// TestRingReadBytesBound: however deep the ring's pool, the reads on the
// device never hold more read-buffer bytes than ReadBufferBytes: with
// room for three 24 KiB buffers (20 KiB values), three reads are on the
// device and the rest wait for bytes, with 48 KiB buffers in the mix, and
// a read larger than the whole budget still runs (alone).
func TestRingReadBytesBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vlens  []int // values cycle through these lengths
		budget int64
		inDev  int // reads on the device while held
	}{
		{"uniform", []int{20 << 10}, 72 << 10, 3},
		{"mixed", []int{20 << 10, 40 << 10}, 144 << 10, 0},
		{"over budget", []int{40 << 10}, 32 << 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRingGate(t)
			o := testOpts()
			o.Runtime, o.ReadWorkers, o.ReadBufferBytes = RuntimeUring, 2, tc.budget
			e := openT(t, g, o)
			const n = 24
			vlen := func(i int) int { return tc.vlens[i%len(tc.vlens)] }
			for i := range n {
				k := keyN("b", i)
				if !e.Insert(k, mval(k, 1, vlen(i)), time.Time{}) {
					t.Fatalf("insert %s refused", k)
				}
			}
			settle(t, e)
			g.armed.Store(true)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					k := keyN("b", i)
					if got, ok := e.Get(k, nil); !ok || !bytes.Equal(got, mval(k, 1, vlen(i))) {
						t.Errorf("%s: ok=%v, len %d", k, ok, len(got))
					}
				})
			}
			waitFor(t, "every read on the device or waiting for bytes", func() bool {
				inDev, _, _ := g.held()
				return inDev > 0 && inDev+int(e.rt.bytes.nwait.Load()) == n
			})
			if inDev, _, _ := g.held(); tc.inDev != 0 && inDev != tc.inDev {
				t.Errorf("%d reads on the device, want %d", inDev, tc.inDev)
			}
			close(g.open)
			wg.Wait()
			_, peakN, peakBytes := g.held()
			limit := max(tc.budget, int64(48<<10)) // a read over budget runs alone
			if int64(peakBytes) > limit || e.rt.bytes.peak.Load() > limit {
				t.Errorf("read-buffer bytes on the device peaked at %d (engine %d), budget %d",
					peakBytes, e.rt.bytes.peak.Load(), tc.budget)
			}
			if tc.name != "over budget" && peakN <= o.ReadWorkers {
				t.Errorf("peak reads on the device %d, want above ReadWorkers %d", peakN, o.ReadWorkers)
			}
			// A worker gives its bytes back after it has handed the entry
			// to its Get, so a Get may return a moment before that.
			waitFor(t, "every read's bytes given back", func() bool { return e.rt.bytes.held.Load() == 0 })
			closeT(t, e)
		})
	}
}

// TestReadBytesFIFO: a read that does not fit waits, and so do the
// smaller ones after it, though they would fit: a large read is not
// starved. A release wakes every waiter that then fits, in order.
func TestReadBytesFIFO(t *testing.T) {
	s := newReadBytes(100)
	w := func() chan struct{} { return make(chan struct{}, 1) }
	if got := s.acquire(60, w()); got != 60 {
		t.Fatalf("acquire(60) took %d", got)
	}
	var wg sync.WaitGroup
	get := func(n int64) {
		wg.Go(func() {
			if got := s.acquire(n, w()); got != n {
				t.Errorf("acquire(%d) took %d", n, got)
			}
		})
	}
	get(50)
	waitFor(t, "the 50-byte read to wait", func() bool { return s.nwait.Load() == 1 })
	get(10)
	waitFor(t, "the 10-byte read to wait behind it", func() bool { return s.nwait.Load() == 2 })
	if !s.waiting() {
		t.Fatal("waiting() false with two waiters")
	}
	s.release(60)
	wg.Wait()
	if s.held.Load() != 60 || s.waiting() {
		t.Fatalf("held %d, waiting %v; want 60, false", s.held.Load(), s.waiting())
	}
	s.release(50)
	s.release(10)
	if got := s.acquire(1000, w()); got != 100 || s.held.Load() != 100 {
		t.Fatalf("acquire over the budget took %d (held %d), want the whole 100", got, s.held.Load())
	}
	s.release(100)
	if s.held.Load() != 0 || s.peak.Load() != 100 {
		t.Fatalf("held %d, peak %d; want 0, 100", s.held.Load(), s.peak.Load())
	}
}

// TestFillingWithReadsOnRing: reads on the ring are the device's, so a
// fresh device with more reads in flight than ReadWorkers still counts
// as having room to fill (Engine.Filling); a read waiting for read-buffer
// bytes is one waiting to be handed to the device, and it does not.
func TestFillingWithReadsOnRing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		budget  int64
		inDev   int
		filling bool
	}{
		{"reads on the ring", 0, 8, true},
		{"reads waiting for bytes", 2 << 10, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n, vlen = 8, 1000
			g := newRingGate(t)
			o := testOpts()
			o.Runtime, o.ReadWorkers, o.ReadBufferBytes = RuntimeUring, 2, tc.budget
			e := openT(t, g, o)
			insertAll(t, e, "f", n, 1, vlen)
			settle(t, e)
			if !e.Filling() {
				t.Fatal("a fresh idle device is not filling")
			}
			g.armed.Store(true)
			wait := getAll(t, e, "f", n, vlen)
			waitFor(t, "reads on the device or waiting for bytes", func() bool {
				inDev, _, _ := g.held()
				return inDev == tc.inDev && inDev+int(e.rt.bytes.nwait.Load()) == n
			})
			if got := e.Filling(); got != tc.filling {
				t.Errorf("Filling() = %v with %d reads on the device, want %v", got, tc.inDev, tc.filling)
			}
			close(g.open)
			wait()
			closeT(t, e)
		})
	}
}

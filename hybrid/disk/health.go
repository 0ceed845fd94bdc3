package disk

import (
	"sync"
	"sync/atomic"
	"time"

	"strata/blockdev"
)

// health takes a failing device out of service and brings it back, as
// Traffic Server marks a bad disk offline. Every failed device read or
// write, and every read past ReadTimeout while some I/O has been held by
// the device for 4 × ReadTimeout (at least a second), is a failure (a read that only
// waited behind quick ones on a loaded machine is a miss, not the
// device's failure: see ioRuntime.deviceStuck); ErrorLimit of them
// within ErrorWindow take the disk out: Gets skip it and Inserts are
// dropped, both counted, while the memory tier and the origin serve on.
// The prober goroutine then reads the superblock every ProbeInterval
// (doubling after each failure, up to probeMax), with ReadTimeout and
// at most one probe read in flight; the first probe that answers with an
// intact superblock brings the disk back. Each change is logged once.
//
// Concurrency: out is read on every Get and Insert (one atomic load);
// failures take mu, which only the error path touches. The prober is
// owned by the engine (e.wg; it stops on stopReclaim).
type health struct {
	e   *Engine
	out atomic.Bool // out of service

	mu    sync.Mutex
	fails []time.Time // ring of the last ErrorLimit failure times (opts.Now)
	next  int         // ring position of the next failure
	n     int         // failures in the ring
	since time.Time   // when the disk was taken out
	ioErr uint64      // IOErrors when it was taken out
	upAt  time.Time   // when it last came back

	wake     chan struct{} // the prober's signal: taken out
	interval time.Duration // the prober's current wait; prober only
	buf      []byte        // the superblock copies a probe reads into
	inflight chan error    // a probe read not yet returned; prober only
}

// probeMax caps the wait between probes (unless ProbeInterval is
// longer), and is how long a disk must stay in service for the wait to
// start again from ProbeInterval when it fails again.
const probeMax = 30 * time.Second

func (h *health) init(e *Engine) {
	h.e = e
	h.wake = make(chan struct{}, 1)
	if n := e.opts.ErrorLimit; n > 0 {
		h.fails = make([]time.Time, n)
	}
	bs := int(e.lay.blockSize)
	h.buf = blockdev.AlignedBuffer(superblockCopies*bs, bs)
}

// down reports whether the disk is out of service.
func (h *health) down() bool { return h.out.Load() }

// fail records one failure and takes the disk out of service if it is
// the ErrorLimit-th within ErrorWindow. Failures while out are not kept.
func (h *health) fail() {
	if len(h.fails) == 0 || h.out.Load() {
		return
	}
	now := h.e.opts.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fails[h.next] = now
	h.next = (h.next + 1) % len(h.fails)
	h.n = min(h.n+1, len(h.fails))
	oldest := h.fails[h.next] // of the last ErrorLimit, once the ring is full
	if h.n == len(h.fails) && now.Sub(oldest) <= h.e.opts.ErrorWindow && !h.out.Load() {
		h.takeOut()
	}
}

// takeOut marks the disk out of service, logs it once and wakes the
// prober. REQUIRES: h.mu held.
func (h *health) takeOut() {
	h.out.Store(true)
	h.n = 0
	h.since = time.Now()
	h.ioErr = h.e.c.ioErrors.Load()
	h.e.c.outOfService.Add(1)
	o := &h.e.opts
	h.e.opts.Logger.Error("disk: disk taken out of service: reads are misses and writes are dropped until it answers again",
		"failures", len(h.fails), "within", o.ErrorWindow, "probe_every", o.ProbeInterval, "suppressed", h.e.errLog.take())
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// bringBack puts the disk back in service and logs it once.
func (h *health) bringBack() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.upAt = time.Now()
	// Logged before the disk is seen back, so that whoever sees it back
	// (Stats().Online) finds the line too.
	h.e.opts.Logger.Info("disk: disk back in service", "out_for", h.upAt.Sub(h.since).Round(time.Millisecond),
		"io_errors_meanwhile", h.e.c.ioErrors.Load()-h.ioErr, "suppressed", h.e.errLog.take())
	h.out.Store(false)
}

// run is the prober goroutine: it waits to be woken, probes until the
// disk answers, and stops on stopReclaim.
func (h *health) run() {
	defer h.e.wg.Done()
	for {
		select {
		case <-h.wake:
		case <-h.e.stopReclaim:
			return
		}
		if !h.probeUntilBack() {
			return
		}
	}
}

// probeUntilBack probes with backoff until a probe succeeds (true) or
// the engine stops (false).
func (h *health) probeUntilBack() bool {
	o := &h.e.opts
	if h.interval == 0 || time.Since(h.upAt) > probeMax {
		h.interval = o.ProbeInterval
	}
	t := time.NewTimer(h.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-h.e.stopReclaim:
			return false
		}
		if h.probe() {
			h.bringBack()
			return true
		}
		h.interval = min(2*h.interval, max(probeMax, o.ProbeInterval))
		t.Reset(h.interval)
	}
}

// probe reads both superblock copies, waiting at most ReadTimeout, and
// reports whether the read succeeded and a copy is intact. A probe read
// that has not returned is waited for again by the next probe instead of
// starting another.
func (h *health) probe() bool {
	if h.inflight == nil {
		ch := make(chan error, 1)
		h.inflight = ch
		h.e.wg.Add(1)
		go func() {
			defer h.e.wg.Done()
			_, err := h.e.dev.ReadAt(h.buf, 0)
			ch <- err
		}()
	}
	t := time.NewTimer(h.e.opts.ReadTimeout)
	defer t.Stop()
	select {
	case err := <-h.inflight:
		h.inflight = nil
		return err == nil && h.intact()
	case <-t.C:
	case <-h.e.stopReclaim:
	}
	return false
}

// intact reports whether either superblock copy in buf parses.
func (h *health) intact() bool {
	bs := int(h.e.lay.blockSize)
	for i := range superblockCopies {
		if _, err := parseSuperblock(h.buf[i*bs:]); err == nil {
			return true
		}
	}
	return false
}

// errLog logs device errors at most once per errLogEvery; the
// errors in between are counted and the next line logged (or the next
// out-of-service or back-in-service line) says how many were suppressed.
// (A failing device otherwise logs every failed read and write: hundreds
// of lines a second.)
type errLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// take returns the count of errors suppressed since the last line and
// resets it: a line that reports them instead (out of service, back in
// service) calls it, so an outage's errors are all accounted for even
// when none follows.
func (l *errLog) take() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.suppressed
	l.suppressed = 0
	return n
}

// errLogEvery is the least time between two device error lines.
const errLogEvery = time.Second

// deviceFailed records a failed device operation (counted by the caller
// as an I/O error or a read timeout): a failure toward taking the disk
// out of service, and an error line unless one was logged less than
// errLogEvery ago.
func (e *Engine) deviceFailed(msg string, args ...any) {
	defer e.health.fail() // after counting it: an out-of-service line reports it
	l := &e.errLog
	now := time.Now()
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < errLogEvery {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	e.opts.Logger.Error(msg, args...)
}

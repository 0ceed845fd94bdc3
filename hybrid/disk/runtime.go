package disk

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ioRuntime runs the engine's disk I/O on goroutine pools of its own
// (RuntimeUnified, RuntimeSeparated, RuntimeUring: the device's reads
// then go through io_uring, see useRing) or in the calling goroutines
// (RuntimeDisabled). Pools bound the number of OS threads blocked in
// pread/pwrite and keep request goroutines off the disk; the read queue is
// bounded and a read that cannot be queued is a miss. With a pool a Get
// waits for its read at most ReadTimeout, queueing included; a Get that
// reads in its own goroutine (disabled) waits for the device however long
// it takes.
//
// The read pool has ReadWorkers goroutines, or, with a ring, ringFanout
// times as many (readers): a read waiting on a ring holds no thread and
// no P, so the depth is bounded by memory instead, the read-buffer bytes
// of Options.ReadBufferBytes (readBytes), which every pooled read takes
// before its buffer.
type ioRuntime struct {
	e         *Engine
	reads     chan *readJob // nil when disabled
	writes    chan *buf     // nil when disabled
	stopCh    chan struct{}
	wg        sync.WaitGroup
	abandoned atomic.Int64 // jobs whose Get timed out, not yet let go by a worker
	bytes     *readBytes   // read-buffer bytes of the reads being served
	// busy holds, per worker, when its current read or write began (Unix
	// ns, 0 when idle): a read that times out is the device's failure only
	// when some I/O has been held by the device for a while (deviceStuck),
	// not when it waited behind many quick reads on a busy machine.
	busy    []atomic.Int64
	spawned int
}

// readJob is one Get's read handed to a read worker. Jobs are pooled,
// each with its timer (the read deadline); done has room for one signal
// so a worker never blocks on it.
//
// Ownership of the job, and of the read buffer it carries back, is
// settled by state, with compare-and-swap: a pending job's caller that
// times out moves it to abandoned and returns at once; the job then
// belongs to the worker, which skips the read if it has not started,
// gives back the buffer if it has read one, and gives the job back to
// the pool. A worker whose read is done moves the job to delivering, sets
// l and ok and signals done; from then the caller owns the job and the
// buffer in l (to deliver or lend, in its own goroutine). A caller that
// times out after that waits for the signal (a store, not an I/O).
type readJob struct {
	h, v  uint64
	l     loaded
	ok    bool
	state atomic.Uint32
	timer *time.Timer
	done  chan struct{}
}

// Read job states.
const (
	jobPending uint32 = iota
	jobDelivering
	jobAbandoned
)

var readJobs = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &readJob{done: make(chan struct{}, 1), timer: t}
}}

// free gives j back to the pool.
func (j *readJob) free() {
	j.l = loaded{}
	readJobs.Put(j)
}

// newIORuntime starts the pools; readers is the read pool's size.
func newIORuntime(e *Engine, readers int) *ioRuntime {
	o := &e.opts
	rt := &ioRuntime{e: e, stopCh: make(chan struct{}), bytes: newReadBytes(o.ReadBufferBytes)}
	rt.busy = make([]atomic.Int64, readers+o.WriteWorkers)
	switch o.Runtime {
	case RuntimeUnified:
		rt.reads = make(chan *readJob, o.ReadQueue)
		rt.writes = make(chan *buf, o.Flushers)
		rt.spawn(readers, rt.reads, rt.writes)
	case RuntimeSeparated, RuntimeUring:
		rt.reads = make(chan *readJob, o.ReadQueue)
		rt.writes = make(chan *buf, o.Flushers)
		rt.spawn(readers, rt.reads, nil)
		rt.spawn(o.WriteWorkers, nil, rt.writes)
	}
	return rt
}

// ringFanout is how many read goroutines (and ring entries) a ring gives
// per ReadWorkers, at most maxRingReaders in all (unless ReadWorkers is
// more). 64 clients reading 64 KiB objects from disk through the proxy
// served 12.8k requests/s with 8 reads in flight and 16.1k with 32; the
// budget's bytes (ReadBufferBytes, 8 × 2 MiB) hold 128 reads of 64 KiB
// values (80 KiB buffers), 51 of 256 KiB values (320 KiB).
const (
	ringFanout     = 16
	maxRingReaders = 512
)

// readers is the size of the read pool: ReadWorkers, or with a ring
// ringFanout times as many, at most maxRingReaders.
func readers(o *Options, ring bool) int {
	if !ring {
		return o.ReadWorkers
	}
	return max(o.ReadWorkers, min(o.ReadWorkers*ringFanout, maxRingReaders))
}

func (rt *ioRuntime) spawn(n int, reads chan *readJob, writes chan *buf) {
	for range n {
		rt.wg.Add(1)
		go rt.worker(&rt.busy[rt.spawned], reads, writes)
		rt.spawned++
	}
}

// worker serves reads and/or writes (a nil channel is never ready) until
// stop, then lets go of the read jobs still queued (their Gets timed out).
// REQUIRES at stop: no write is queued (Close waits for flushers first).
func (rt *ioRuntime) worker(busy *atomic.Int64, reads chan *readJob, writes chan *buf) {
	defer rt.wg.Done()
	wake := make(chan struct{}, 1) // readBytes.acquire's
	for {
		select {
		case j := <-reads:
			rt.serveRead(j, busy, wake)
		case b := <-writes:
			busy.Store(time.Now().UnixNano())
			rt.doWrite(b)
			busy.Store(0)
		case <-rt.stopCh:
			rt.drain(reads, busy, wake)
			return
		}
	}
}

// drain serves (or lets go) the read jobs still queued.
func (rt *ioRuntime) drain(reads chan *readJob, busy *atomic.Int64, wake chan struct{}) {
	for {
		select {
		case j := <-reads:
			rt.serveRead(j, busy, wake)
		default:
			return
		}
	}
}

// write starts b's write at device offset off; b.done is signalled when it
// returns.
func (rt *ioRuntime) write(b *buf, off int64) {
	b.woff = off
	if rt.writes == nil {
		rt.doWrite(b)
		return
	}
	rt.writes <- b
}

// serveRead runs one Get's read, unless its Get has left, and hands the
// loaded entry to the Get if it is still waiting (see readJob). It takes
// the read's buffer bytes first (readBytes; wake is the worker's), and
// marks busy only then: a read waiting for bytes waits behind other
// reads, not on the device (deviceStuck). A panic is recovered (a miss
// for the Get, see Engine.recovered): a waiting Get is always released.
func (rt *ioRuntime) serveRead(j *readJob, busy *atomic.Int64, wake chan struct{}) {
	if j.state.Load() == jobAbandoned {
		rt.letGo(j)
		return
	}
	n := rt.bytes.acquire(rt.e.readSize(j.v), wake)
	defer rt.bytes.release(n)
	if j.state.Load() == jobAbandoned { // left while the read waited for bytes
		rt.letGo(j)
		return
	}
	busy.Store(time.Now().UnixNano())
	defer busy.Store(0)
	defer func() {
		if r := recover(); r != nil {
			// Counted before the Get is released, so that it sees the
			// panic in Stats when it returns.
			rt.e.recovered("read worker", r)
			if j.state.CompareAndSwap(jobPending, jobDelivering) {
				j.l, j.ok = loaded{}, false
				j.done <- struct{}{}
			} else {
				rt.letGo(j)
			}
		}
	}()
	l, ok := rt.e.load(j.h, j.v)
	if !j.state.CompareAndSwap(jobPending, jobDelivering) {
		if ok {
			rt.e.bufs.put(l.buf)
		}
		rt.letGo(j)
		return
	}
	j.l, j.ok = l, ok
	j.done <- struct{}{}
}

// letGo gives back a job its Get abandoned.
func (rt *ioRuntime) letGo(j *readJob) {
	rt.abandoned.Add(-1)
	j.free()
}

// doWrite runs one flush write. A panic is recovered and fails the write,
// so the flusher waiting for it carries on.
func (rt *ioRuntime) doWrite(b *buf) {
	defer func() {
		if r := recover(); r != nil {
			b.err = fmt.Errorf("disk: panic in write: %v", r)
			rt.e.recovered("write worker", r)
		}
		b.done <- struct{}{}
	}()
	_, b.err = rt.e.dev.WriteAt(b.data[:b.wlen], b.woff)
}

// read loads the entry at index value v (Engine.load) on a read worker,
// or inline when disabled; on true the caller owns l.buf. A full read
// queue is a miss; so is a read that has not finished ReadTimeout after
// it was queued (the job is abandoned to its worker).
func (rt *ioRuntime) read(h, v uint64) (l loaded, ok bool) {
	if rt.reads == nil {
		return rt.e.load(h, v)
	}
	j := readJobs.Get().(*readJob)
	j.h, j.v = h, v
	j.state.Store(jobPending)
	select {
	case rt.reads <- j:
	default:
		rt.e.c.readQueueFull.Add(1)
		j.free()
		// A full queue behind a device that holds its I/O is how a hung
		// disk looks once every worker is stuck in it: held against the
		// device like a timeout, or it would never be taken out.
		if rt.deviceStuck() {
			rt.e.deviceFailed("disk: disk read queue full behind a stuck read; served as a miss", "timeout", rt.e.opts.ReadTimeout)
		}
		return l, false
	}
	j.timer.Reset(rt.e.opts.ReadTimeout)
	select {
	case <-j.done:
		j.timer.Stop()
	case <-j.timer.C:
		if rt.abandon(j) {
			return l, false
		}
		<-j.done
	}
	l, ok = j.l, j.ok
	j.free()
	return l, ok
}

// abandon leaves j to its worker if the worker has not begun delivering,
// and counts the timeout. After true the caller must not touch j.
func (rt *ioRuntime) abandon(j *readJob) bool {
	rt.abandoned.Add(1)
	if !j.state.CompareAndSwap(jobPending, jobAbandoned) {
		rt.abandoned.Add(-1)
		return false
	}
	rt.e.c.readTimeouts.Add(1)
	if rt.deviceStuck() {
		rt.e.deviceFailed("disk: disk read timed out; served as a miss", "timeout", rt.e.opts.ReadTimeout)
	}
	return true
}

// deviceStuck reports whether some worker's current I/O has been with the
// device for stuckAfter. A read that times out without that waited behind
// other reads, or behind slow ones (an overloaded machine, pool or shared
// device), and is not held against the device's health.
func (rt *ioRuntime) deviceStuck() bool {
	since := time.Now().Add(-stuckAfter(rt.e.opts.ReadTimeout)).UnixNano()
	for i := range rt.busy {
		if t := rt.busy[i].Load(); t != 0 && t <= since {
			return true
		}
	}
	return false
}

// stuckAfter is how long a device must hold one I/O for a timed-out read
// to count as its failure: 4 × ReadTimeout, at least a second. A hung
// device holds its I/O for good and is taken out a second or so later
// than with a shorter bound; a slow one that still answers is not. Half
// of ReadTimeout, as before, took a working disk out of service four
// times in 17 s of 64 clients reading 256 KiB objects from it on a loaded
// machine: its 4 MiB flusher writes and 256 KiB reads sometimes took
// over 125 ms, and every Get and Insert skipped the disk while it was out.
func stuckAfter(readTimeout time.Duration) time.Duration {
	return max(4*readTimeout, time.Second)
}

func (rt *ioRuntime) stop() {
	close(rt.stopCh)
	rt.wg.Wait()
}

// readsWaiting reports whether a pooled read waits to be handed to the
// device (Engine.Filling): queued for a worker, or waiting for
// read-buffer bytes. Reads in a ring are the device's, which serves many
// at once.
func (rt *ioRuntime) readsWaiting() bool {
	return len(rt.reads) > 0 || rt.bytes.waiting()
}

// ringDevice is a device whose reads can go through an io_uring ring
// (blockdev.Disk).
type ringDevice interface{ UseRing(depth int) error }

// useRing sends the device's reads through an io_uring ring as deep as
// the read pool with a ring (readers), if the device offers one, and
// reports whether it does; where io_uring is not available it logs why
// and reads stay on pread.
func (e *Engine) useRing() bool {
	d, ok := e.dev.(ringDevice)
	if !ok {
		return false
	}
	if err := d.UseRing(readers(&e.opts, true)); err != nil {
		e.opts.Logger.Warn("disk: io_uring is not available; disk reads use pread, each holding a P while the device works", "err", err)
		return false
	}
	return true
}

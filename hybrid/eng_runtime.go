package hybrid

import (
	"fmt"
	"sync"

	"strata/blockdev"
)

// engRuntime runs the engine's disk I/O on goroutine pools of its own
// (RuntimeUnified, RuntimeSeparated) or in the calling goroutines
// (RuntimeDisabled). Pools bound the number of OS threads blocked in
// pread/pwrite and keep request goroutines off the disk; the read queue is
// bounded and a read that cannot be queued is a miss.
type engRuntime struct {
	e      *Engine
	reads  chan *engReadJob // nil when disabled
	writes chan *engBuf     // nil when disabled
	stopCh chan struct{}
	wg     sync.WaitGroup
}

// engReadJob is one Get handed to a read worker. Jobs are pooled; done has
// room for one signal so a worker never blocks on it.
type engReadJob struct {
	h, v     uint64
	key, dst []byte
	ok       bool
	expiry   int64
	done     chan struct{}
}

var engReadJobs = sync.Pool{New: func() any { return &engReadJob{done: make(chan struct{}, 1)} }}

func newEngRuntime(e *Engine) *engRuntime {
	rt := &engRuntime{e: e, stopCh: make(chan struct{})}
	o := &e.opts
	switch o.Runtime {
	case RuntimeUnified:
		rt.reads = make(chan *engReadJob, o.ReadQueue)
		rt.writes = make(chan *engBuf, o.Flushers)
		rt.spawn(o.ReadWorkers, rt.reads, rt.writes)
	case RuntimeSeparated:
		rt.reads = make(chan *engReadJob, o.ReadQueue)
		rt.writes = make(chan *engBuf, o.Flushers)
		rt.spawn(o.ReadWorkers, rt.reads, nil)
		rt.spawn(o.WriteWorkers, nil, rt.writes)
	}
	return rt
}

func (rt *engRuntime) spawn(n int, reads chan *engReadJob, writes chan *engBuf) {
	for range n {
		rt.wg.Add(1)
		go rt.worker(reads, writes)
	}
}

// worker serves reads and/or writes (a nil channel is never ready) until
// stop. REQUIRES at stop: no job is queued (Close waits for Gets and
// flushers first).
func (rt *engRuntime) worker(reads chan *engReadJob, writes chan *engBuf) {
	defer rt.wg.Done()
	for {
		select {
		case j := <-reads:
			rt.serveRead(j)
		case b := <-writes:
			rt.doWrite(b)
		case <-rt.stopCh:
			return
		}
	}
}

// write starts b's write at device offset off; b.done is signalled when it
// returns.
func (rt *engRuntime) write(b *engBuf, off int64) {
	b.woff = off
	if rt.writes == nil {
		rt.doWrite(b)
		return
	}
	rt.writes <- b
}

// serveRead runs one Get's read. A panic is recovered (a miss for the
// Get, see Engine.recovered): the waiting Get is always released.
func (rt *engRuntime) serveRead(j *engReadJob) {
	dst := j.dst
	defer func() {
		if r := recover(); r != nil {
			j.dst, j.expiry, j.ok = dst, 0, false
			rt.e.recovered("read worker", r)
		}
		j.done <- struct{}{}
	}()
	j.dst, j.expiry, j.ok = rt.e.readEntry(j.h, j.v, j.key, j.dst)
}

// doWrite runs one flush write. A panic is recovered and fails the write,
// so the flusher waiting for it carries on.
func (rt *engRuntime) doWrite(b *engBuf) {
	defer func() {
		if r := recover(); r != nil {
			b.err = fmt.Errorf("hybrid: panic in write: %v", r)
			rt.e.recovered("write worker", r)
		}
		b.done <- struct{}{}
	}()
	_, b.err = rt.e.dev.WriteAt(b.data[:b.wlen], b.woff)
}

// read runs readEntry on a read worker, or inline when disabled. A full
// read queue is a miss.
func (rt *engRuntime) read(h, v uint64, key, dst []byte) ([]byte, int64, bool) {
	if rt.reads == nil {
		return rt.e.readEntry(h, v, key, dst)
	}
	j := engReadJobs.Get().(*engReadJob)
	j.h, j.v, j.key, j.dst = h, v, key, dst
	select {
	case rt.reads <- j:
	default:
		rt.e.c.readQueueFull.Add(1)
		j.key, j.dst = nil, nil
		engReadJobs.Put(j)
		return dst, 0, false
	}
	<-j.done
	out, expiry, ok := j.dst, j.expiry, j.ok
	j.key, j.dst = nil, nil
	engReadJobs.Put(j)
	return out, expiry, ok
}

func (rt *engRuntime) stop() {
	close(rt.stopCh)
	rt.wg.Wait()
}

// engBufPool keeps aligned read buffers in power-of-two size classes from
// one block up. Buffers above engPoolMax are not kept.
type engBufPool struct {
	bs    int
	pools [24]sync.Pool
}

type engAligned struct{ b []byte }

const engPoolMax = 1 << 20

func (p *engBufPool) class(n int) int {
	k := 0
	for p.bs<<k < n {
		k++
	}
	return k
}

func (p *engBufPool) get(n int) *engAligned {
	k := p.class(n)
	if k < len(p.pools) {
		if x := p.pools[k].Get(); x != nil {
			return x.(*engAligned)
		}
	}
	return &engAligned{b: blockdev.AlignedBuffer(p.bs<<k, p.bs)}
}

func (p *engBufPool) put(a *engAligned) {
	if k := p.class(len(a.b)); len(a.b) <= engPoolMax && k < len(p.pools) {
		p.pools[k].Put(a)
	}
}

package disk

import (
	"sync"
	"time"

	"strata/blockdev"
)

// flusher owns one share of the keys (by hash), a queue, and two aligned
// buffers: one filling, one being written. It serialises each entry once,
// straight into the filling buffer; a full buffer, or one that waited
// FlushDelay, becomes one aligned write at its region's cursor. At most one
// write is in flight, so index updates happen in write order.
//
// mu guards the flusher's state, the filling buffer above all, against
// Insert's direct path (direct.go), which serialises an entry into the
// filling buffer itself when the flusher is idle. The flusher holds mu
// whenever it is not waiting in its select (while it serialises queued
// items, writes, waits for a write, commits); Insert only ever TryLocks
// it, so it never waits for the flusher.
type flusher struct {
	e     *Engine
	mu    sync.Mutex
	q     queue
	stop  chan struct{}
	data  [2][]byte
	bufs  [2]buf
	cur   *buf // filling; nil until the first item, or while no region is held
	fly   *buf // in flight; nil if none
	spare []*item

	region    uint32
	regionSeq uint64
	hasRegion bool
	cursor    int64 // region offset of the next write (block aligned)
	broken    bool  // a write failed: abandon the region

	timer    *time.Timer
	due      bool // the filling buffer waited long enough
	full     bool // a direct insert found the filling buffer nearly full: write it
	taking   bool // items taken from the queue are being put in buffers
	stopping bool // stop was closed: drain and exit
}

// buf is one batch being built or written.
type buf struct {
	data      []byte
	region    uint32
	regionSeq uint64
	start     int64 // region offset where data[0] goes
	batchOff  int   // offset of the batch header in data
	end       int   // next entry offset in data
	limit     int   // usable bytes of data for this batch
	wlen      int   // bytes to write (block aligned), set by write
	woff      int64 // device offset of the write
	recs      []record
	items     []*item
	unsealed  []int // data offsets of direct entries: pad and checksum due in finish
	seals     bool  // seal the region once this write completes
	err       error
	done      chan struct{}
}

func (e *Engine) startFlushers() {
	e.flush = make([]*flusher, e.opts.Flushers)
	for i := range e.flush {
		f := &flusher{e: e, stop: make(chan struct{}), timer: time.NewTimer(time.Hour)}
		f.timer.Stop()
		f.q.signal = make(chan struct{}, 1)
		for j := range f.data {
			f.data[j] = blockdev.AlignedBuffer(e.opts.BufferSize, int(e.lay.blockSize))
			f.bufs[j].data = f.data[j]
			f.bufs[j].done = make(chan struct{}, 1)
		}
		e.flush[i] = f
	}
	for _, f := range e.flush {
		e.flushWG.Add(1)
		go f.run()
	}
}

// run is the flusher goroutine. It drains its queue after stop closes and
// exits once everything queued is written. A panic in the loop is
// recovered (see Engine.recovered) and the loop resumes; the item being
// handled at that moment may stay pending until Close.
func (f *flusher) run() {
	defer f.e.flushWG.Done()
	defer f.timer.Stop()
	for !f.loop() {
	}
}

// flusher wake-up causes, as loop's select saw them.
const (
	wakeSignal = iota
	wakeFlown
	wakeTimer
	wakeStop
	wakeAbort
)

// loop runs the flusher until it has drained after stop (true) or a
// panic was recovered (false). It holds f.mu except while it waits.
func (f *flusher) loop() (done bool) {
	f.mu.Lock()
	defer func() {
		f.mu.Unlock()
		if r := recover(); r != nil {
			f.e.recovered("flusher", r)
			done = false
		}
	}()
	for {
		items := f.q.take(f.spare)
		f.taking = len(items) > 0
		for i, it := range items {
			f.add(it)
			items[i] = nil
		}
		f.taking = false
		f.spare = items
		if f.cur != nil && len(f.cur.items) > 0 && f.fly == nil && (f.due || f.full || f.e.opts.FlushDelay < 0) {
			f.write()
		}
		if f.stopping && len(items) == 0 {
			f.drain()
			if f.q.empty() { // a failed write may have queued tombstones
				return true
			}
			continue
		}
		var flyDone chan struct{}
		if f.fly != nil {
			flyDone = f.fly.done
		}
		f.handle(f.sleep(flyDone))
	}
}

// sleep waits, without f.mu, for something to do.
func (f *flusher) sleep(flyDone chan struct{}) int {
	f.mu.Unlock()
	defer f.mu.Lock()
	select {
	case <-f.q.signal:
		return wakeSignal
	case <-flyDone:
		return wakeFlown
	case <-f.timer.C:
		return wakeTimer
	case <-f.stop:
		return wakeStop
	case <-f.e.abort:
		return wakeAbort
	}
}

// handle acts on what woke the flusher.
func (f *flusher) handle(wake int) {
	switch wake {
	case wakeFlown:
		f.complete()
	case wakeTimer:
		f.due = true
	case wakeStop:
		f.stopping = true
		f.stop = nil
	case wakeAbort:
		f.abortQueue()
		f.stopping = true
	}
}

// drain writes the filling buffer and waits for the last write.
func (f *flusher) drain() {
	if f.cur != nil && len(f.cur.items) > 0 {
		f.write()
	}
	f.wait()
}

// abortQueue drops what is queued but not yet in a buffer (Close timed out).
func (f *flusher) abortQueue() {
	for _, it := range f.q.take(nil) {
		f.e.c.dropAborted.Add(1)
		f.e.fail(it, false)
	}
}

// add serialises one item into the filling buffer, writing buffers and
// moving to a new region as needed. An item is never dropped silently:
// either it lands in a buffer or it is failed and counted.
func (f *flusher) add(it *item) {
	size := entrySize(it.klen, len(it.kv)-it.klen)
	for {
		if f.cur == nil && !f.open() {
			f.e.c.dropAborted.Add(1)
			f.e.fail(it, false)
			return
		}
		b := f.cur
		if b.fits(size) {
			f.put(b, it, size)
			return
		}
		switch {
		case len(b.items) > 0:
			f.write()
		case b.limit < len(b.data) && b.start > 0:
			f.retire() // the region's tail is too short for this entry
		default:
			f.e.c.dropTooLarge.Add(1) // cannot happen: Insert checks the size
			f.e.fail(it, false)
			return
		}
	}
}

// fits reports whether an entry of size bytes, and its index record, fit
// in b.
func (b *buf) fits(size int) bool {
	return b.end+size+(len(b.recs)+1)*indexRecordSize <= b.limit
}

// put serialises it at b.end.
func (f *flusher) put(b *buf, it *item, size int) {
	var flags uint8
	if it.tomb {
		flags = entryFlagTomb
	}
	h := entry{flags: flags, hash: it.hash, seq: it.seq, expiry: it.expiry}
	encodeEntry(b.data[b.end:], &h, it.key(), it.value())
	f.e.c.copiedFromQueue.Add(uint64(len(it.kv) - it.klen))
	f.place(b, it, size)
}

// place adds the entry of it, serialised at b.end, to b's batch, and
// starts the flush delay if it is the batch's first. REQUIRES: f.mu held.
func (f *flusher) place(b *buf, it *item, size int) {
	if len(b.items) == 0 {
		f.due = false
		if d := f.e.opts.FlushDelay; d > 0 {
			f.timer.Reset(d)
		}
	}
	b.recs = append(b.recs, record{hash: it.hash, seq: it.seq, expiry: it.expiry,
		offset: uint32(b.start) + uint32(b.end), length: uint32(size), tomb: it.tomb})
	b.items = append(b.items, it)
	b.end += size
}

// open starts a new filling buffer at the cursor, taking a clean region
// first if the flusher has none. It fails only when Close gave up.
func (f *flusher) open() bool {
	if !f.hasRegion {
		id, seq, ok := f.e.regions.acquire(f.e.abort)
		if !ok {
			return false
		}
		f.region, f.regionSeq, f.hasRegion, f.cursor = id, seq, true, 0
	}
	b := &f.bufs[0]
	if f.fly == b {
		b = &f.bufs[1]
	}
	b.region, b.regionSeq, b.start = f.region, f.regionSeq, f.cursor
	b.limit = int(min(int64(len(b.data)), f.e.lay.regionSize-f.cursor))
	b.batchOff, b.seals, b.err, b.unsealed = 0, false, nil, b.unsealed[:0]
	if f.cursor == 0 {
		putRegionHeader(b.data, regionHeader{instance: f.e.inst, seq: f.regionSeq})
		b.batchOff = regionHeaderSize
	}
	b.end = b.batchOff + batchHeaderSize
	f.cur = b
	return true
}

// finish writes the index records and the batch header and pads the batch
// to the block size (b.wlen, set by writeLen).
func (b *buf) finish(e *Engine) {
	for _, off := range b.unsealed {
		sealEntry(b.data[off:])
	}
	b.unsealed = b.unsealed[:0]
	recOff := b.end
	for i := range b.recs {
		putRecord(b.data[recOff+i*indexRecordSize:], &b.recs[i])
	}
	recEnd := recOff + len(b.recs)*indexRecordSize
	h := batch{instance: e.inst, regionSeq: b.regionSeq, length: uint32(recEnd - b.batchOff),
		count: uint32(len(b.recs)), recOff: uint32(recOff - b.batchOff)}
	putBatchHeader(b.data[b.batchOff:], &h, b.data[recOff:recEnd])
	clear(b.data[recEnd:b.wlen])
}

// writeLen is the bytes b's write takes: its entries and index records,
// padded to the block size.
func (b *buf) writeLen(e *Engine) int {
	return int(alignUp(int64(b.end+len(b.recs)*indexRecordSize), e.lay.blockSize))
}

// write finishes the filling buffer and starts its write, after the
// previous write completed. The cursor moves past it; a full region is
// sealed when this write completes.
func (f *flusher) write() {
	f.wait() // a failure here may abandon f.cur
	b := f.cur
	f.cur = nil
	f.timer.Stop()
	f.due, f.full = false, false
	if b == nil || len(b.items) == 0 {
		return
	}
	b.wlen = b.writeLen(f.e)
	f.cursor += int64(b.wlen)
	if f.cursor >= f.e.lay.regionSize {
		b.seals = true
		f.hasRegion = false
	}
	f.fly = b
	if f.hasRegion {
		f.open() // at once, so that Insert's direct path finds room (never blocks: a region is held)
	}
	off := f.e.lay.regionBase(b.region) + b.start
	if f.taking {
		b.finish(f.e)
		f.e.rt.write(b, off)
		return
	}
	// Checksums and the write without f.mu: b is out of Insert's reach
	// now, and an idle flusher with nothing in hand lets the direct path
	// fill the new buffer meanwhile.
	f.unlocked(func() {
		b.finish(f.e)
		f.e.rt.write(b, off)
	})
}

// unlocked runs fn without f.mu. REQUIRES: f.mu held; no item in hand
// (taken from the queue and not yet in a buffer): Insert's direct path
// would pass it.
func (f *flusher) unlocked(fn func()) {
	f.mu.Unlock()
	defer f.mu.Lock() // also when fn panics: loop's recovery unlocks
	fn()
}

// retire gives up the current region (its tail cannot hold the next
// entry): it is sealed now, or when the write in flight to it completes.
func (f *flusher) retire() {
	f.cur = nil
	f.hasRegion = false
	if f.fly != nil && f.fly.region == f.region {
		f.fly.seals = true
		return
	}
	f.e.regions.seal(f.region)
}

// wait blocks until the write in flight, if any, completes.
func (f *flusher) wait() {
	if f.fly != nil {
		<-f.fly.done
		f.complete()
	}
}

// complete publishes the finished write: the index learns the addresses of
// entries that are still the newest for their key, and their queue bytes
// are released. After a failed write the region is abandoned and its
// entries are failed.
func (f *flusher) complete() {
	b, e := f.fly, f.e
	f.fly = nil
	if b.err != nil {
		e.c.ioErrors.Add(1)
		e.deviceFailed("disk: flush write failed", "region", b.region, "offset", b.start, "err", b.err)
		f.abandon(b) // first: the tombstones fail queues must go to a new region
		for _, it := range b.items {
			e.c.writeFailed.Add(1)
			e.fail(it, true)
		}
	} else {
		e.commit(b)
	}
	if b.seals {
		e.regions.seal(b.region)
	}
	clear(b.items)
	b.items, b.recs = b.items[:0], b.recs[:0]
}

// abandon stops writing the failed write's region: later batches after a
// hole would be unreachable for recovery. The filling buffer, if it was
// meant for the same region, is failed too.
func (f *flusher) abandon(b *buf) {
	if c := f.cur; c != nil && c.region == b.region {
		for _, it := range c.items {
			f.e.c.writeFailed.Add(1)
			f.e.fail(it, true)
		}
		clear(c.items)
		c.items, c.recs, c.unsealed = c.items[:0], c.recs[:0], c.unsealed[:0]
		f.cur = nil
	}
	if f.hasRegion && f.region == b.region {
		f.hasRegion = false
		b.seals = true
	}
}

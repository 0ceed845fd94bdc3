package disk

import (
	"sync/atomic"
	"time"
)

// reclaimLoop keeps CleanRegions clean regions ready until stopReclaim.
// A panic is recovered (Engine.recovered) and the loop resumes.
func (e *Engine) reclaimLoop() {
	defer e.wg.Done()
	s := newScan(e)
	for !e.reclaimRun(s) {
	}
}

// reclaimRun reclaims until stopReclaim (true) or a recovered panic
// (false).
func (e *Engine) reclaimRun(s *scan) (done bool) {
	defer func() {
		if r := recover(); r != nil {
			e.recovered("reclaimer", r)
			done = false
		}
	}()
	for {
		for e.regions.needReclaim() {
			if !e.reclaimOne(s) {
				break
			}
		}
		select {
		case <-e.regions.kick:
		case <-e.stopReclaim:
			return true
		}
	}
}

// reclaimOne empties one victim: walk its index records, drop the index
// entries that still point into it (compare-and-remove, so a newer copy
// elsewhere survives), reinsert read entries if configured, shadow the
// dropped ones with tombstones unless the victim is the oldest, wait for
// Gets already reading it, zero its first block (so recovery sees it
// clean) in pick order, and return it to the clean pool.
//
// Picking and walking happen inside the gate, as an operation does, so
// that Close waits for the tombstones a walk queues before it stops the
// flushers. Once Close has shut the gate no tombstone could be written:
// victims are then the oldest (fifo), which need none.
func (e *Engine) reclaimOne(s *scan) bool {
	open := e.gate.enter(reclaimGate)
	id, ticket, oldest, ok := e.regions.pick(!open)
	if !ok {
		if open {
			e.gate.exit(reclaimGate)
		}
		return false
	}
	released := false
	defer func() {
		if !released { // panicking: later tickets must not wait for ours
			e.regions.skipTurn(ticket)
			e.opts.Logger.Error("disk: reclaim abandoned; region unused until restart", "region", id)
		}
	}()
	var w *shadowWait
	if !oldest {
		w = newShadowWait()
	}
	e.evictAll(s, id, open, w)
	if w != nil {
		e.waitShadows(id, w)
	}
	e.regions.waitReaders(&e.regions.regions[id])
	e.regions.waitTurn(ticket)
	if _, err := e.dev.WriteAt(e.zeroBlk, e.lay.regionBase(id)); err != nil {
		e.c.ioErrors.Add(1)
		e.deviceFailed("disk: reclaim: zero region header failed", "region", id, "err", err)
	}
	released = true
	e.regions.release(id)
	e.c.reclaims.Add(1)
	return true
}

// reclaimGate is the key hash reclaimers pass the gate with.
const reclaimGate = 0

// evictAll walks victim id and evicts its entries; w is set when the
// victim is not the oldest sealed region (see Engine.shadow). open: the
// caller entered the gate as reclaimGate; evictAll leaves it, panicking or
// not.
func (e *Engine) evictAll(s *scan, id uint32, open bool, w *shadowWait) {
	if open {
		defer e.gate.exit(reclaimGate)
	}
	s.reset(id, false)
	now := e.opts.Now().UnixNano()
	if _, _, err := s.walk(func(recs []record) {
		for i := range recs {
			e.evict(id, &recs[i], now, w)
		}
	}); err != nil {
		e.c.ioErrors.Add(1) // not strict: only a failed read ends a walk in error
		e.deviceFailed("disk: reclaim: region scan failed", "region", id, "err", err)
	}
	if s.damaged != nil { // its index entries stay; reads of them fail their checks and miss
		e.opts.Logger.Warn("disk: reclaim: region header damaged", "region", id, "reason", s.damaged)
	}
}

// evict drops rec's index entry if it still points at rec; with w set, a
// dropped entry gets a tombstone (shadow).
func (e *Engine) evict(id uint32, rec *record, now int64, w *shadowWait) {
	if rec.tomb {
		return
	}
	v := e.lay.pack(id, rec.offset, rec.length)
	cur, ok := e.ix.get(rec.hash)
	if !ok || cur|idxAccessed != v|idxAccessed {
		return
	}
	if e.opts.Reinsertion && cur&idxAccessed != 0 && (rec.expiry == 0 || rec.expiry > now) {
		e.reinsert(id, rec, cur)
	}
	for !e.ix.compareAndRemove(rec.hash, cur) {
		if cur, ok = e.ix.get(rec.hash); !ok || cur|idxAccessed != v|idxAccessed {
			return
		}
	}
	e.c.evictions.Add(1)
	if w != nil {
		e.shadow(rec.hash, w)
	}
}

// shadow queues a tombstone for h, whose index entry a reclaim of a
// region newer than the oldest sealed one has just dropped: an older copy
// of the key may sit in an older region, and a scan at the next open
// (no checkpoint, or a crash) would serve it. With the emptiest picker
// this happens whenever the emptiest region is not the oldest, e.g. one
// sealed early by a failed write while holding a key's newest version.
// The tombstone's region holds tombstones, so the picker takes it only
// once it is the oldest, after every region it may shadow.
//
// Nothing is written if an operation on the key is pending (an Insert, a
// Remove, a failed write's tombstone, or rec's own reinsertion): it is
// newer and decides what a restart finds; nor if the index holds the key
// again (a newer write committed since the drop). Checked under the
// pending-shard lock, like Insert and commit, so the tombstone, which
// takes the next sequence, can never override a newer Insert. The
// tombstone holds w until it has been written or given up (freeItem).
func (e *Engine) shadow(h uint64, w *shadowWait) {
	s := e.pending.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[h] != nil {
		return
	}
	if _, ok := e.ix.get(h); ok {
		return
	}
	w.n.Add(1)
	e.queueTomb(s, h, 0, w)
	e.c.shadowTombs.Add(1)
}

// shadowWait counts the shadow tombstones of one reclaim not yet written
// (or given up), plus one the reclaimer holds while it walks; done closes
// when the count reaches zero.
type shadowWait struct {
	n    atomic.Int32
	done chan struct{}
}

func newShadowWait() *shadowWait {
	w := &shadowWait{done: make(chan struct{})}
	w.n.Store(1)
	return w
}

// release drops one hold.
func (w *shadowWait) release() {
	if w.n.Add(-1) == 0 {
		close(w.done)
	}
}

// shadowWaitMax bounds how long a reclaim waits for its shadow tombstones:
// a safety valve (a flusher that panicked with items in hand never frees
// them), not a pace.
const shadowWaitMax = 2 * time.Second

// waitShadows waits, before victim id's header is zeroed, until the
// shadow tombstones its walk queued are on the device: zeroed first, a
// crash in between would leave neither the dropped entries nor their
// tombstones, and a scan would serve the older copies they shadow. It
// gives up, zeroing early (counted in ShadowEarlyZeroes), when a flusher
// waits for a clean region with none left (the tombstones may need the
// one this reclaim produces), after shadowWaitMax, or when Close gave up.
func (e *Engine) waitShadows(id uint32, w *shadowWait) {
	w.release()
	t := time.NewTimer(shadowWaitMax)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-e.abort:
			return
		case <-e.regions.starved:
			if len(e.regions.clean) > 0 {
				continue
			}
			e.c.shadowEarly.Add(1) // a load condition: counted, not logged
			return
		case <-t.C:
			e.c.shadowEarly.Add(1)
			e.opts.Logger.Warn("disk: reclaim: zeroing a region before its shadow tombstones are written", "region", id, "waited", shadowWaitMax)
			return
		}
	}
}

// reinsert queues rec's entry again, with its original sequence, if it is
// still the key's newest version (nothing pending, index unchanged) and
// admission and the queue bound allow. Keeping the sequence means a newer
// Insert or Remove always wins, before and after a restart.
func (e *Engine) reinsert(id uint32, rec *record, cur uint64) {
	if e.health.down() {
		return
	}
	abs := e.lay.regionBase(id) + int64(rec.offset)
	rs := alignDown(abs, e.lay.blockSize)
	n := int(alignUp(abs+int64(rec.length), e.lay.blockSize) - rs)
	buf := e.bufs.get(n)
	defer e.bufs.put(buf)
	if _, err := e.dev.ReadAt(buf.b[:n], rs); err != nil {
		e.c.ioErrors.Add(1)
		e.deviceFailed("disk: reclaim: read for reinsertion failed", "region", id, "err", err)
		return
	}
	h, key, value, err := decodeEntry(buf.b[abs-rs : abs-rs+int64(rec.length)])
	if err != nil || h.hash != rec.hash || h.seq != rec.seq {
		e.c.corruptions.Add(1)
		return
	}
	if !e.gate.enter(rec.hash) {
		return
	}
	defer e.gate.exit(rec.hash)
	size := int(rec.length)
	if e.opts.Admission != nil && !e.opts.Admission.Admit(rec.hash, size) {
		return
	}
	if e.queued.Add(int64(size)) > e.opts.QueueBytes {
		e.queued.Add(-int64(size))
		return
	}
	ps := e.pending.shard(rec.hash)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if now, ok := e.ix.get(rec.hash); ps.m[rec.hash] != nil || !ok || now|idxAccessed != cur|idxAccessed {
		e.queued.Add(-int64(size))
		return
	}
	it := newItem(len(key) + len(value))
	it.hash, it.seq, it.expiry, it.klen, it.size = rec.hash, rec.seq, rec.expiry, len(key), int64(size)
	copy(it.kv[copy(it.kv, key):], value)
	ps.put(it)
	e.flusherFor(rec.hash).q.push(it)
	e.c.reinsertions.Add(1)
}

package disk

import (
	"bytes"

	"github.com/cespare/xxhash/v2"
)

// Get appends the value stored for key to dst and reports whether it was
// found. The order is: pending set (queued writes and removes), index, one
// aligned read of the blocks covering the entry (on the runtime's read
// pool, within ReadTimeout), then checks of magic, checksum, hash, key and
// expiry. Any failure is a miss, counted: damage and expiry also drop the
// index entry, an I/O error or a timeout leaves it (the device may answer
// again). While the disk is out of service (ErrorLimit) only the pending
// set answers. A hit allocates nothing when dst has room.
func (e *Engine) Get(key, dst []byte) ([]byte, bool) {
	v, _, ok := e.GetWithExpiry(key, dst)
	return v, ok
}

// GetWithExpiry is Get that also returns the entry's expiry in unix
// nanoseconds (0: none), so a caller can copy the entry elsewhere with the
// same lifetime.
func (e *Engine) GetWithExpiry(key, dst []byte) ([]byte, int64, bool) {
	h := xxhash.Sum64(key)
	if !e.gate.enter(h) {
		return dst, 0, false
	}
	defer e.gate.exit(h)
	out, expiry, v, res := e.find(h, key, dst)
	switch res {
	case foundPending:
		return out, expiry, true
	case foundNone:
		return dst, 0, false
	}
	l, ok := e.rt.read(h, v)
	if !ok {
		return dst, 0, false
	}
	return e.deliver(&l, key, dst)
}

// Lookup results of find.
const (
	foundNone    = iota // a miss
	foundPending        // a hit in the pending set, appended to dst
	foundIndexed        // an index entry, to be read from the device
)

// find runs the steps of a Get before the device read: the pending set
// (a hit there is appended to dst), then, unless the disk is out of
// service, the index, whose address it returns.
func (e *Engine) find(h uint64, key, dst []byte) (out []byte, expiry int64, v uint64, res int) {
	e.c.gets.Add(1)
	out, expiry, pres := e.pending.get(h, key, dst, e.opts.Now)
	switch pres {
	case pendingHit:
		e.c.hits.Add(1)
		e.c.pendingHits.Add(1)
		return out, expiry, 0, foundPending
	case pendingHidden:
		return dst, 0, 0, foundNone
	}
	if e.health.down() {
		e.c.offlineGets.Add(1)
		return dst, 0, 0, foundNone
	}
	if v, ok := e.ix.get(h); ok {
		return dst, 0, v, foundIndexed
	}
	return dst, 0, 0, foundNone
}

// Contains reports whether the engine may hold key: its hash is indexed or
// queued, and not as a remove. It reads no device bytes, so a hash
// collision or a damaged entry can make it say yes for a key Get misses;
// it never says no for a key Get would find.
func (e *Engine) Contains(key []byte) bool {
	h := xxhash.Sum64(key)
	if !e.gate.enter(h) {
		return false
	}
	defer e.gate.exit(h)
	if tomb, ok := e.pending.peek(h); ok {
		return !tomb
	}
	_, ok := e.ix.get(h)
	return ok
}

// loaded is an entry read from the device and checked, all but its
// key: key and val borrow buf, which deliver gives back to the pool (or
// lend lends to a Value).
type loaded struct {
	buf      *aligned
	key, val []byte
	h, cur   uint64 // key hash; the index value it was read under
	expiry   int64
}

// load reads the entry at index value v and checks magic, checksum, hash
// and expiry; damage and expiry drop the index entry, counted. It
// registers as a reader of the region first and re-checks the index, so
// a reclaimer (which marks the region, drops index entries, then waits
// for readers) never reuses a region under it. It needs no key, so a read
// whose Get has left can still complete (readJob).
func (e *Engine) load(h, v uint64) (l loaded, ok bool) {
	r, off, length := e.lay.unpack(v)
	if int(r) >= len(e.regions.regions) {
		return l, false
	}
	reg := &e.regions.regions[r]
	reg.readers.Add(1)
	defer e.regions.readDone(reg)
	if st := reg.state.Load(); st != regionWriting && st != regionSealed {
		return l, false
	}
	cur, ok := e.ix.get(h)
	if !ok || cur|idxAccessed != v|idxAccessed {
		return l, false
	}
	abs, rs, n := e.span(r, off, length)
	buf := e.bufs.get(n)
	defer func() {
		if l.buf == nil { // a failed check, or a panic in the device (serveRead)
			e.bufs.put(buf)
		}
	}()
	if _, err := e.dev.ReadAt(buf.b[:n], rs); err != nil {
		e.c.ioErrors.Add(1)
		e.deviceFailed("disk: disk read failed", "offset", rs, "len", n, "err", err)
		return l, false
	}
	hdr, k, val, err := decodeEntry(buf.b[abs-rs : abs-rs+int64(length)])
	switch {
	case err != nil || hdr.tombstone() || hdr.hash != h:
		e.c.corruptions.Add(1)
	case hdr.expiry != 0 && hdr.expiry <= e.opts.Now().UnixNano():
		e.c.expiredOnRead.Add(1)
	default:
		return loaded{buf: buf, key: k, val: val, h: h, cur: cur, expiry: hdr.expiry}, true
	}
	e.drop(h, cur)
	return l, false
}

// span returns the device offset of the entry of length bytes at offset
// off of region r, and the aligned blocks that cover it: n bytes from rs.
func (e *Engine) span(r, off, length uint32) (abs, rs int64, n int) {
	abs = e.lay.regionBase(r) + int64(off)
	rs = alignDown(abs, e.lay.blockSize)
	return abs, rs, int(alignUp(abs+int64(length), e.lay.blockSize) - rs)
}

// readSize is the size of the read buffer a load of index value v takes
// (bufPool's class of its span).
func (e *Engine) readSize(v uint64) int64 {
	_, _, n := e.span(e.lay.unpack(v))
	return int64(e.bufs.size(e.bufs.class(n)))
}

// deliver appends l's value to dst if l holds key (a different key is a
// hash collision: a miss), and gives l's buffer back.
func (e *Engine) deliver(l *loaded, key, dst []byte) ([]byte, int64, bool) {
	defer e.bufs.put(l.buf)
	if !e.hit(l, key) {
		return dst, 0, false
	}
	return append(dst, l.val...), l.expiry, true
}

// hit reports whether l holds key, counting a hit (and marking the entry
// accessed for reinsertion) or a hash collision.
func (e *Engine) hit(l *loaded, key []byte) bool {
	if !bytes.Equal(l.key, key) {
		e.c.collisions.Add(1)
		return false
	}
	e.c.hits.Add(1)
	if e.opts.Reinsertion && l.cur&idxAccessed == 0 {
		e.ix.compareAndSwap(l.h, l.cur, l.cur|idxAccessed)
	}
	return true
}

// drop removes h from the index if it still holds v.
func (e *Engine) drop(h, v uint64) {
	if e.ix.compareAndRemove(h, v) {
		e.unaccount(v)
	}
}

// commit publishes a completed write: each entry that is still its key's
// pending operation gets its address in the index (a newer Insert or a
// Remove since then wins; the older entry's bytes are dead on arrival).
func (e *Engine) commit(b *buf) {
	var tombs int32
	var payload uint64
	live := &e.regions.regions[b.region].live
	for i, it := range b.items {
		rec := &b.recs[i]
		payload += uint64(len(it.kv))
		if it.tomb {
			tombs++
		}
		s := e.pending.shard(it.hash)
		s.mu.Lock()
		if s.m[it.hash] == it {
			// Index first, then forget: a Get that finds the shard's
			// filter at zero skips this lock and asks the index, so the
			// index must hold the new address before the filter drops.
			if !it.tomb {
				if old, ok := e.ix.set(it.hash, e.lay.pack(b.region, rec.offset, rec.length)); ok {
					e.unaccount(old)
				}
				live.Add(int64(rec.length))
			}
			s.del(it.hash)
			if e.afterForget != nil {
				e.afterForget(it.hash)
			}
		} else {
			e.c.supersed.Add(1)
		}
		s.mu.Unlock()
		e.queued.Add(-it.size)
		freeItem(it)
	}
	e.regions.regions[b.region].tombs.Add(tombs)
	e.c.batches.Add(1)
	e.c.entriesWritten.Add(uint64(len(b.items)))
	e.c.bytesWritten.Add(uint64(b.wlen))
	e.c.payload.Add(payload)
	if e.opts.Admission != nil {
		e.opts.Admission.Written(b.wlen)
	}
}

// fail forgets an item that will not be written and frees it. If it was
// its key's newest operation, the key is hidden (index entry dropped too),
// so an older value never reappears in its place while the engine runs.
// With durable set (the item's write failed, or was abandoned with its
// region, while the engine is not giving up on Close), a tombstone is
// queued in its place, so an older copy on the device does not come back
// after a restart either; a tombstone whose own write fails is retried up
// to tombTries times (then counted in TombstonesLost).
func (e *Engine) fail(it *item, durable bool) {
	s := e.pending.shard(it.hash)
	s.mu.Lock()
	if s.m[it.hash] == it {
		// Index first (see commit), then the pending op: the tombstone
		// replaces it, or it is forgotten.
		if old, ok := e.ix.remove(it.hash); ok {
			e.unaccount(old)
		}
		switch {
		case !durable || e.aborting():
			s.del(it.hash)
		case !it.tomb || it.tries+1 < tombTries:
			tries := uint8(0)
			if it.tomb {
				tries = it.tries + 1
			}
			e.queueTomb(s, it.hash, tries, it.shadow) // a retried shadow still holds its reclaim
			it.shadow = nil
		default:
			s.del(it.hash)
			e.c.tombsLost.Add(1)
		}
		if e.afterForget != nil {
			e.afterForget(it.hash)
		}
	}
	s.mu.Unlock()
	e.queued.Add(-it.size)
	freeItem(it)
}

// tombTries is how many writes of a tombstone for a failed write are
// attempted before the engine gives up on it.
const tombTries = 3

// aborting reports whether Close gave up waiting (its ctx ended).
func (e *Engine) aborting() bool {
	select {
	case <-e.abort:
		return true
	default:
		return false
	}
}

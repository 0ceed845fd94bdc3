package disk

// Insert's direct path: an entry serialised straight into its flusher's
// filling buffer, so that its value is copied once on its way to the
// device (from the caller, or the memory tier's blocks, into the buffer)
// instead of twice (into a queued item, then by the flusher into the
// buffer). The memory tier's evictions reach the disk this way whenever
// the flusher keeps up.
//
// It is taken only when it changes nothing the queued path guarantees:
//   - the flusher is idle (Insert gets f.mu with TryLock: never waits;
//     the flusher lets go of it only asleep, or to checksum and submit a
//     batch with no item in hand) and has a filling buffer with room for
//     the entry and its record;
//   - the flusher's queue is empty, checked again under the key's pending
//     shard lock just before the sequence is assigned. Every earlier
//     operation of the key was made pending, and queued, under that lock:
//     with the queue empty and the flusher idle it is already in a buffer,
//     so this entry lands after it, as it would through the queue (a newer
//     value written before an older one could bring the older one back
//     after its region outlives the newer one's).
//
// Otherwise Insert queues a copy as before. The entry is in the batch as
// if the flusher had put it there: its record, its item (pending until the
// write commits or fails, served from the buffer meanwhile), the flush
// delay started by a batch's first entry. Only its pad and checksum wait
// for the flusher (finish), so the caller's critical section — the memory
// tier's shard lock, for an eviction — holds a copy and no checksum.

// directResult is what tryDirect did.
type directResult uint8

const (
	directNone   directResult = iota // not taken: queue a copy
	directPlaced                     // in the filling buffer
	directFill                       // fill copied the wrong length: drop
)

// tryDirect serialises the entry straight into its flusher's filling
// buffer if it can do so at once (see above); it reports what it did.
// size is entrySize(len(key), vlen), already charged to the queue bound.
func (e *Engine) tryDirect(h uint64, key, value []byte, vlen int, exp int64, size int, fill func([]byte) int, mode insertMode) directResult {
	f := e.flusherFor(h)
	if !f.mu.TryLock() {
		return directNone
	}
	defer f.mu.Unlock()
	b := f.cur
	if b == nil || f.taking || !b.fits(size) || !f.q.empty() {
		return directNone
	}
	off := b.end
	kv := b.data[off+entryHeaderSize : off+entryHeaderSize+len(key)+vlen]
	k := copy(kv, key)
	if fill == nil {
		copy(kv[k:], value)
	} else if fill(kv[k:]) != vlen {
		return directFill
	}
	e.c.copiedDirect.Add(uint64(vlen))
	s := e.pending.shard(h)
	s.mu.Lock()
	if !f.q.empty() {
		// Something was queued since the first look: it may be an older
		// operation of this key, which must not be passed. Queue a copy
		// of what the buffer holds (rare: a race of two inserts).
		s.mu.Unlock()
		it := newItem(len(kv))
		it.hash, it.expiry, it.klen, it.size = h, exp, len(key), int64(size)
		copy(it.kv, kv)
		e.c.copiedToQueue.Add(uint64(vlen))
		e.submit(it, mode == insertLater)
		return directPlaced
	}
	it := newDirectItem()
	it.hash, it.expiry, it.klen, it.size, it.kv = h, exp, len(key), int64(size), kv
	it.seq = e.seq.Add(1)
	s.put(it)
	putEntryHeader(b.data[off:], &entry{hash: h, seq: it.seq, expiry: exp}, len(key), vlen)
	b.unsealed = append(b.unsealed, off)
	// The flusher writes a batch after FlushDelay (the timer place starts
	// on the first entry), or at once with no delay: then it must look.
	wake := len(b.items) == 0 && e.opts.FlushDelay < 0
	f.place(b, it, size)
	s.mu.Unlock()
	if !b.fits(2*size) || !b.fits(b.limit/8) {
		// The next entry may well not fit (sizes vary): the flusher
		// writes the batch now and opens its other buffer, so that the
		// next Insert finds room rather than queueing a copy.
		f.full, wake = true, true
	}
	if wake {
		if mode == insertLater {
			f.q.wake.Store(true)
		} else {
			f.q.notify()
		}
	}
	return directPlaced
}

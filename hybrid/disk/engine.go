package disk

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
)

// Engine is the disk tier: a log-structured store of key/value entries in
// equal regions of a blockdev.Device, with an in-memory index from key
// hash to packed disk address. See the package documentation for the
// format, the write path, reclaim, recovery and the concurrency rules.
//
// All methods are safe for concurrent use. Insert and Remove return at
// once; the write happens on a flusher goroutine. Get copies the value into
// the caller's dst; Lend lends the read buffer itself to a Value, the
// caller's alone until Release (lend.go).
type Engine struct {
	dev     blockdev.Device
	opts    Options
	lay     layout
	inst    uint64 // instance id from the superblock
	sb      superblock
	desc    *ckptDesc // the checkpoint descriptor found at open, if any
	hotMu   sync.Mutex
	hotIn   []uint64 // hot set the checkpoint brought back (HotSet)
	hotOut  []uint64 // hot set for the checkpoint Close writes (SetHotSet)
	ix      *index
	pending *pending
	regions *regions
	flush   []*flusher
	rt      *ioRuntime
	c       counters
	health  health
	errLog  errLog
	seq     atomic.Uint64 // last sequence handed out
	queued  atomic.Int64  // bytes accepted and not yet written
	zeroBlk []byte
	bufs    bufPool
	fillAdm FillAdmitter // Options.Admission, if it is one

	gate gate // operations enter it; Close shuts it

	stopReclaim chan struct{} // closed by Close: stops reclaimers and the prober
	abort       chan struct{} // closed when Close's ctx expires
	wg          sync.WaitGroup
	flushWG     sync.WaitGroup
	closeOnce   sync.Once
	closeErr    error

	// afterForget, if set (tests only, before the first Insert), runs in
	// commit and fail right after an item stops being its key's pending
	// operation, with the pending shard lock held.
	afterForget func(h uint64)
}

// Open formats or recovers dev per opts.Recovery and starts the
// flushers, reclaimers and I/O workers. The engine does not own dev: Close
// syncs it but leaves closing it to the caller.
func Open(dev blockdev.Device, opts Options) (*Engine, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	lay, err := newLayout(dev, &opts)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		dev: dev, opts: opts, lay: lay,
		pending:     newPending(),
		regions:     newRegions(lay.regionCount, opts.Picker, opts.CleanRegions, opts.Reclaimers),
		zeroBlk:     blockdev.AlignedBuffer(int(lay.blockSize), int(lay.blockSize)),
		stopReclaim: make(chan struct{}),
		abort:       make(chan struct{}),
	}
	e.bufs.bs = int(lay.blockSize)
	e.fillAdm, _ = opts.Admission.(FillAdmitter)
	e.gate.init()
	e.health.init(e)
	e.regions.readers.L = &e.regions.readerMu
	ring := opts.Runtime == RuntimeUring && e.useRing()
	start := time.Now()
	if err := e.recover(); err != nil {
		return nil, err
	}
	e.c.recoveryNanos.Store(uint64(time.Since(start)))
	e.rt = newIORuntime(e, readers(&e.opts, ring))
	e.startFlushers()
	for range opts.Reclaimers {
		e.wg.Add(1)
		go e.reclaimLoop()
	}
	e.wg.Add(1)
	go e.health.run()
	return e, nil
}

// Insert queues key → value for writing and returns at once. It copies key
// and value. expiry zero means never. It returns false, and counts why, if
// the entry was dropped: engine closed, too large, already expired, disk
// out of service, refused by admission, or over the queue bound. A dropped Insert also
// hides any older value of the key, so a Get never returns a value older
// than the newest Insert.
func (e *Engine) Insert(key, value []byte, expiry time.Time) bool {
	return e.insert(key, value, len(value), expiry, nil, insertNow)
}

// InsertFrom is Insert for a value of vlen bytes that the caller has not
// gathered: only once the entry has passed every check (size, expiry,
// admission, queue bound) does it call fill, once and before it returns,
// to copy the value into the engine's own buffer (len(dst) == vlen). fill
// reports the bytes it copied; if they are not vlen the entry is dropped
// like a refused one. The memory tier's eviction uses it so that an entry
// admission refuses is never copied, and one it admits is copied once,
// from the memory tier's blocks straight into a flusher's write buffer
// when the flusher is idle with room (else into the write queue, and
// again by the flusher).
func (e *Engine) InsertFrom(key []byte, vlen int, expiry time.Time, fill func(dst []byte) int) bool {
	return e.insert(key, nil, vlen, expiry, fill, insertNow)
}

// WriteDown is InsertFrom without admission, for the one-off write of the
// memory tier at stop: admission's rate limit guards the device's
// endurance in steady state, while a write-down is bounded by its caller's
// deadline instead. It still drops (false) an entry over the queue bound,
// too large, expired, or with the disk out of service: a caller that can
// wait paces itself on WriteRoom first.
func (e *Engine) WriteDown(key []byte, vlen int, expiry time.Time, fill func(dst []byte) int) bool {
	return e.insert(key, nil, vlen, expiry, fill, insertForced)
}

// EntrySize is the bytes an entry of the given key and value lengths
// takes in the write queue (and on the device, before batch overhead).
func EntrySize(klen, vlen int) int { return entrySize(klen, vlen) }

// InsertFromLater and Kick are the write-on-eviction handshake: the
// memory tier's eviction hook offers each evicted entry with
// InsertFromLater, and its caller calls Kick once the memory tier's lock
// is released.
//
// InsertFromLater is InsertFrom without the flusher's wake-up. Its
// contract:
//   - it never waits for I/O, a flusher or queue space (it takes only
//     short internal locks), so it may run under the memory tier's shard
//     lock;
//   - it asks Options.Admission with the key's hash and the entry's size
//     before anything is copied: a refused entry costs no copy;
//   - it calls fill at most once, before it returns, with len(dst) ==
//     vlen, to copy the value straight into a flusher's buffer or the
//     write queue; fill must not call back into the Engine;
//   - it returns whether the entry was queued (false, counted, for every
//     reason Insert may drop one);
//   - the flusher of a queued entry may not be woken before the next
//     Kick: its caller owes one.
func (e *Engine) InsertFromLater(key []byte, vlen int, expiry time.Time, fill func(dst []byte) int) bool {
	return e.insert(key, nil, vlen, expiry, fill, insertLater)
}

// Kick wakes the flushers that InsertFromLater left waiting. It never
// blocks; call it after every call that may have evicted from the memory
// tier, outside the memory tier's locks. A Kick with nothing left waiting
// costs one atomic load per flusher.
func (e *Engine) Kick() {
	for _, f := range e.flush {
		f.q.kick()
	}
}

// insertMode says how insert queues an entry.
type insertMode uint8

const (
	insertNow    insertMode = iota // wake the flusher
	insertLater                    // leave the wake-up to Kick
	insertForced                   // skip admission, wake the flusher (WriteDown)
)

// insert is Insert (fill nil: value holds vlen bytes), InsertFrom,
// InsertFromLater and WriteDown, as mode says.
func (e *Engine) insert(key, value []byte, vlen int, expiry time.Time, fill func([]byte) int, mode insertMode) bool {
	h := xxhash.Sum64(key)
	if !e.gate.enter(h) {
		return false
	}
	defer e.gate.exit(h)
	e.c.inserts.Add(1)
	var exp int64
	if !expiry.IsZero() {
		exp = expiry.UnixNano()
	}
	size := entrySize(len(key), vlen)
	switch {
	case vlen < 0 || len(key) > 1<<16-1 || size > e.lay.maxEntry:
		e.c.dropTooLarge.Add(1)
	case exp != 0 && exp <= e.opts.Now().UnixNano():
		e.c.dropExpired.Add(1)
	case e.health.down():
		e.c.dropOffline.Add(1)
	case e.opts.Admission != nil && mode != insertForced && !e.admit(h, size):
		e.c.dropAdmission.Add(1)
	case e.queued.Add(int64(size)) > e.opts.QueueBytes:
		e.queued.Add(-int64(size))
		e.c.dropQueue.Add(1)
	default:
		switch e.tryDirect(h, key, value, vlen, exp, size, fill, mode) {
		case directPlaced:
			return true
		case directFill:
			e.queued.Add(-int64(size))
			e.c.dropFill.Add(1)
		default:
			if e.queueCopy(h, key, value, vlen, exp, size, fill, mode) {
				return true
			}
		}
	}
	e.hide(h)
	return false
}

// queueCopy queues a copy of the entry for its flusher (the path when
// tryDirect cannot place it); false if fill copied the wrong length.
// size is already charged to the queue bound.
func (e *Engine) queueCopy(h uint64, key, value []byte, vlen int, exp int64, size int, fill func([]byte) int, mode insertMode) bool {
	it := newItem(len(key) + vlen)
	it.hash, it.expiry, it.klen, it.size = h, exp, len(key), int64(size)
	k := copy(it.kv, key)
	if fill == nil {
		copy(it.kv[k:], value)
	} else if fill(it.kv[k:]) != vlen {
		freeItem(it)
		e.queued.Add(-int64(size))
		e.c.dropFill.Add(1)
		return false
	}
	e.c.copiedToQueue.Add(uint64(vlen))
	e.submit(it, mode == insertLater)
	return true
}

// admit asks Options.Admission (non-nil) about an Insert: with the
// engine as the device when it is a FillAdmitter.
func (e *Engine) admit(h uint64, size int) bool {
	if e.fillAdm != nil {
		return e.fillAdm.AdmitTo(e, h, size)
	}
	return e.opts.Admission.Admit(h, size)
}

// Filling reports whether the device can take a write now at device
// speed without costing reads, as admission's Filler needs to admit past
// its steady rate (under its endurance budget):
//   - room: either the clean regions beyond the CleanRegions the
//     reclaimers keep ready hold more than what is queued (a device never
//     filled since it was formatted, or recovered partly empty: writing
//     there evicts nothing), or, on a full device, the reclaimers keep
//     up with their reserve (keepingUp): each region written is then one
//     reclaimed, its oldest entries evicted in FIFO order (accessed ones
//     reinserted, with Reinsertion), as a cache without an admission rate
//     does with every write.
//   - the flushers keep up: less than half of QueueBytes is queued.
//   - no read waits to be handed to the device, with a read pool: none
//     is queued for a worker or waits for read-buffer bytes
//     (ioRuntime.readsWaiting). Reads on a ring are the device's.
//
// A few atomic loads and channel lengths; it never blocks. Its answer is
// a snapshot: what was admitted on it may exceed the room by what other
// goroutines admitted at the same moment, at most the queue bound.
func (e *Engine) Filling() bool {
	q := e.queued.Load()
	if q >= e.FillQueueBytes() || e.health.down() {
		return false
	}
	if e.rt != nil && e.rt.readsWaiting() {
		return false
	}
	clean := len(e.regions.clean)
	if spare := clean - e.regions.target; spare > 0 {
		return int64(spare)*e.lay.regionSize > q
	}
	return keepingUp(clean, e.regions.target) && q < e.lay.regionSize
}

// keepingUp reports whether reclaimers that keep target clean regions
// ready keep up with a full device's writes when clean are ready now: the
// reserve lacks at most one region, and one is left. Reclaimers start on a
// region only once a flusher has taken one from the reserve (reclaiming
// earlier would evict for nothing), so while writes go on at device speed
// the reserve is one short for as long as a reclaim takes, every region;
// asking for the whole reserve then refused for the rate a few percent of
// a fill's entries that the device had the bandwidth to write (a 2 GiB set
// written through a 256 MiB memory tier to a full 4 GiB disk: 382 to 717
// of 8,192 entries, and its next pass missed them). Reclaimers that fall
// behind leave it two or more short, and the fill stops. With the default
// reserve (Flushers + 1) one short still leaves a region for every
// flusher.
func keepingUp(clean, target int) bool {
	return clean >= 1 && clean >= target-1
}

// submit assigns the item its sequence and makes it the key's pending
// operation and the last in its flusher's queue, atomically under the
// pending shard lock, so sequence order, pending order and write order
// agree for each key.
func (e *Engine) submit(it *item, later bool) {
	s := e.pending.shard(it.hash)
	s.mu.Lock()
	it.seq = e.seq.Add(1)
	s.put(it)
	if q := &e.flusherFor(it.hash).q; later {
		q.pushLater(it)
	} else {
		q.push(it)
	}
	s.mu.Unlock()
}

// Remove hides key at once and writes a tombstone so that the key stays
// gone after a restart. A key the engine does not hold costs nothing.
func (e *Engine) Remove(key []byte) {
	h := xxhash.Sum64(key)
	if !e.gate.enter(h) {
		return
	}
	defer e.gate.exit(h)
	e.c.removes.Add(1)
	e.hide(h)
}

// hide removes h from the index and, if it was indexed or pending, queues
// a tombstone (outside the queue bound: tombstones are small and must not
// be lost).
func (e *Engine) hide(h uint64) {
	s := e.pending.shard(h)
	if !s.maybe(h) {
		// Not pending (the filter has no false negatives): only an indexed
		// copy needs the locks. Most hides are of evicted keys admission
		// refused, fresh ones the disk never held; the read lock of an
		// index lookup is all they cost, not two exclusive locks held
		// under the memory tier's shard lock. A key that becomes pending
		// or indexed after this check was written after this hide began,
		// so it is newer and must stay.
		if _, ok := e.ix.get(h); !ok {
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, inIndex := e.ix.remove(h)
	if inIndex {
		e.unaccount(old)
	}
	if p := s.m[h]; !inIndex && (p == nil || p.tomb) {
		return
	}
	e.queueTomb(s, h, 0, nil)
}

// queueTomb queues a tombstone for h as the key's newest operation; tries
// counts earlier failed writes of tombstones for this key; w, if set, is
// the reclaim the tombstone shadows for (released when the item is freed).
// REQUIRES: s is h's pending shard, s.mu held.
func (e *Engine) queueTomb(s *pendingShard, h uint64, tries uint8, w *shadowWait) {
	size := entrySize(0, 0)
	e.queued.Add(int64(size))
	it := newItem(0)
	it.hash, it.tomb, it.size, it.tries, it.shadow = h, true, int64(size), tries, w
	it.seq = e.seq.Add(1)
	s.put(it)
	e.flusherFor(h).q.push(it)
}

// unaccount subtracts an entry that left the index from its region's live
// bytes.
func (e *Engine) unaccount(v uint64) {
	r, _, length := e.lay.unpack(v)
	if int(r) < len(e.regions.regions) {
		e.regions.regions[r].live.Add(-int64(length))
	}
}

func (e *Engine) flusherFor(h uint64) *flusher {
	return e.flush[(h>>17^h)%uint64(len(e.flush))]
}

package disk

import (
	"sync"
	"sync/atomic"
)

// Region states. A region moves clean → writing (one flusher owns it) →
// sealed (full, or found on disk at open) → reclaiming → clean.
const (
	regionClean uint32 = iota
	regionWriting
	regionSealed
	regionReclaiming
)

// region is the in-memory state of one region. state, readers, live and
// tombs are atomics read on the hit path and by reclaimers; seq is guarded
// by regions.mu.
type region struct {
	state   atomic.Uint32
	readers atomic.Int32 // Gets reading its bytes right now
	live    atomic.Int64 // bytes of indexed entries
	tombs   atomic.Int32 // tombstones written into it
	seq     uint64       // region sequence of its current life
}

// regions hands clean regions to flushers and sealed ones to
// reclaimers. Clean regions sit in a channel (a flusher blocks on it when
// none is ready); sealed ones in a slice in seal order (FIFO). Victims are
// zeroed in the order they were picked (tickets) so that a tombstone's
// region is never wiped on disk before the older regions it shadows.
type regions struct {
	regions []region
	clean   chan uint32
	kick    chan struct{}
	starved chan struct{} // a flusher found no clean region (waitShadows)
	picker  PickerMode
	target  int

	mu      sync.Mutex
	turn    *sync.Cond
	sealed  []uint32
	nextSeq uint64
	tickets uint64 // next ticket to hand out
	zeroed  uint64 // tickets whose zeroing finished

	// A reclaimer waits on readers (a cond on readerMu) for the Gets
	// still reading its victim; the last of them signals it.
	readerMu sync.Mutex
	readers  sync.Cond
}

func newRegions(n int, picker PickerMode, target, reclaimers int) *regions {
	rs := &regions{
		regions: make([]region, n),
		clean:   make(chan uint32, n),
		kick:    make(chan struct{}, reclaimers),
		starved: make(chan struct{}, 1),
		picker:  picker,
		target:  target,
		nextSeq: 1,
	}
	rs.turn = sync.NewCond(&rs.mu)
	return rs
}

// poke wakes a reclaimer without blocking.
func (rs *regions) poke() {
	select {
	case rs.kick <- struct{}{}:
	default:
	}
}

// acquire takes a clean region for a flusher, waiting for a reclaimer if
// none is ready, unless abort closes first.
func (rs *regions) acquire(abort <-chan struct{}) (id uint32, seq uint64, ok bool) {
	select {
	case id = <-rs.clean:
	default:
		rs.poke()
		select {
		case rs.starved <- struct{}{}:
		default:
		}
		select {
		case id = <-rs.clean:
		case <-abort:
			return 0, 0, false
		}
	}
	rs.mu.Lock()
	seq = rs.nextSeq
	rs.nextSeq++
	r := &rs.regions[id]
	r.seq = seq
	rs.mu.Unlock()
	r.live.Store(0)
	r.tombs.Store(0)
	r.state.Store(regionWriting)
	if len(rs.clean) < rs.target {
		rs.poke()
	}
	return id, seq, true
}

// seal makes a region a reclaim candidate. REQUIRES: no write to it is in
// flight.
func (rs *regions) seal(id uint32) {
	rs.regions[id].state.Store(regionSealed)
	rs.mu.Lock()
	rs.sealed = append(rs.sealed, id)
	rs.mu.Unlock()
	rs.poke()
}

// needReclaim says whether reclaimers should work.
func (rs *regions) needReclaim() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.clean) < rs.target && len(rs.sealed) > 0
}

// pick chooses a victim, marks it reclaiming and returns its zeroing
// ticket. oldest says whether the victim is the oldest sealed region, the
// one fifo takes: emptying any other may drop the index entry of a key
// whose older copy sits in an older region, which a scan at the next open
// would bring back unless a tombstone shadows it (Engine.shadow). With
// fifo set, the picker is ignored and the victim is the oldest.
func (rs *regions) pick(fifo bool) (id uint32, ticket uint64, oldest, ok bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.sealed) == 0 {
		return 0, 0, false, false
	}
	i := 0
	if rs.picker == PickerEmptiest && !fifo {
		i = rs.emptiest()
	}
	id = rs.sealed[i]
	rs.sealed = append(rs.sealed[:i], rs.sealed[i+1:]...)
	rs.regions[id].state.Store(regionReclaiming)
	ticket = rs.tickets
	rs.tickets++
	return id, ticket, i == 0, true
}

// emptiest returns the position of the sealed region with the fewest live
// bytes. A region holding tombstones qualifies only when it is the oldest:
// reclaiming it earlier could let an older copy of a removed key outlive
// its tombstone on disk. REQUIRES: rs.mu held, len(rs.sealed) > 0.
func (rs *regions) emptiest() int {
	best, bestLive := 0, rs.regions[rs.sealed[0]].live.Load()
	for i, id := range rs.sealed[1:] {
		r := &rs.regions[id]
		if r.tombs.Load() > 0 {
			continue
		}
		if l := r.live.Load(); l < bestLive {
			best, bestLive = i+1, l
		}
	}
	return best
}

// waitTurn blocks until every earlier ticket has been zeroed.
func (rs *regions) waitTurn(ticket uint64) {
	rs.mu.Lock()
	for rs.zeroed != ticket {
		rs.turn.Wait()
	}
	rs.mu.Unlock()
}

// release ends a ticket's turn and returns the region as clean.
func (rs *regions) release(id uint32) {
	rs.mu.Lock()
	rs.zeroed++
	rs.turn.Broadcast()
	rs.mu.Unlock()
	r := &rs.regions[id]
	r.live.Store(0)
	r.tombs.Store(0)
	r.state.Store(regionClean)
	rs.clean <- id
}

// readDone ends a Get's read of reg. The last reader of a region being
// reclaimed wakes the reclaimer. The reclaimer stores regionReclaiming
// before it loads the reader count, and a reader decrements the count
// before it loads the state (sequentially consistent atomics): one of the
// two sees the other, so the reclaimer never sleeps through the last exit.
func (rs *regions) readDone(reg *region) {
	if reg.readers.Add(-1) == 0 && reg.state.Load() == regionReclaiming {
		rs.readerMu.Lock()
		rs.readers.Broadcast()
		rs.readerMu.Unlock()
	}
}

// waitReaders blocks until no Get reads reg. REQUIRES: reg is reclaiming
// and its index entries are gone, so no new reader stays (a late reader
// re-checks state and index after registering, and leaves).
func (rs *regions) waitReaders(reg *region) {
	rs.readerMu.Lock()
	for reg.readers.Load() != 0 {
		rs.readers.Wait()
	}
	rs.readerMu.Unlock()
}

// skipTurn ends a ticket's turn without returning its region: the
// reclaimer that held it panicked, and the region stays out of use until
// a restart.
func (rs *regions) skipTurn(ticket uint64) {
	rs.waitTurn(ticket)
	rs.mu.Lock()
	rs.zeroed++
	rs.turn.Broadcast()
	rs.mu.Unlock()
}

// counts returns the number of clean and sealed regions.
func (rs *regions) counts() (clean, sealed int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.clean), len(rs.sealed)
}

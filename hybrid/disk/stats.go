package disk

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of an Engine's counters (cumulative) and
// gauges (current).
type Stats struct {
	Inserts       uint64 // Insert calls on an open engine
	DropTooLarge  uint64 // refused: larger than a flush buffer can hold
	DropExpired   uint64 // refused: expiry already past
	DropAdmission uint64 // refused by the admission controller
	DropQueue     uint64 // refused: queue bound reached
	DropAborted   uint64 // queued entries dropped by a Close whose ctx ended
	DropFill      uint64 // InsertFrom entries whose fill copied the wrong length
	DropOffline   uint64 // refused: the disk was out of service
	Removes       uint64

	Gets           uint64
	Hits           uint64 // disk hits, pending hits included
	PendingHits    uint64 // hits served from entries not yet written
	ReadQueueFull  uint64 // Gets turned into misses: read queue full
	Corruptions    uint64 // entries that failed their checks when read
	HashCollisions uint64 // index hash matched, stored key did not
	ExpiredOnRead  uint64 // hits turned into misses by expiry
	ReadTimeouts   uint64 // Gets turned into misses: the read passed ReadTimeout
	OfflineGets    uint64 // Gets that skipped the disk: out of service

	IOErrors       uint64 // failed device reads and writes
	Batches        uint64 // flush writes that succeeded
	EntriesWritten uint64 // entries and tombstones in those writes
	BytesWritten   uint64 // device bytes of those writes
	PayloadWritten uint64 // key+value bytes of those entries
	WriteFailed    uint64 // entries lost to failed writes
	TombstonesLost uint64 // tombstones for failed writes given up after retries
	Superseded     uint64 // written entries whose key changed meanwhile

	// Value bytes copied on the write path: by Insert into a queued item
	// (which the flusher copies again into its buffer: CopiedFromQueue),
	// or by Insert straight into a flusher's buffer when the flusher was
	// idle with room (CopiedDirect, the one copy on the way to the device).
	CopiedToQueue, CopiedFromQueue, CopiedDirect uint64

	Reclaims     uint64 // regions reclaimed
	Evictions    uint64 // index entries dropped by reclaim
	Reinsertions uint64 // entries rewritten by reclaim
	// ShadowTombstones: tombstones written for entries dropped by the
	// reclaim of a region other than the oldest, so that an older copy in
	// an older region does not come back after a restart.
	ShadowTombstones uint64
	// ShadowEarlyZeroes: such reclaims that zeroed their victim before
	// its shadow tombstones were written (a flusher was waiting for a
	// clean region, or the wait timed out): a crash right then may bring
	// back an older copy.
	ShadowEarlyZeroes uint64

	Recovered         uint64 // index entries rebuilt at open
	RecoveredBatches  uint64
	RecoverySkipped   uint64 // damaged batches or entries skipped (quiet)
	RecoveryTornTails uint64 // regions whose last batch was torn
	RecoveryDamaged   uint64 // regions whose header was damaged (quiet: data dropped)
	RecoveryDuration  time.Duration

	Panics uint64 // panics recovered in background goroutines

	OutOfService   uint64 // times the disk was taken out of service
	Online         bool   // the disk is in service
	AbandonedReads int64  // reads whose Get timed out, still held by a worker or the read queue
	ReadBuffersOut int64  // aligned read buffers out of their pool: held by Values (Lend) or reads in progress
	BadReleases    uint64 // read buffer returns refused: a Value released twice, or copied (a bug)

	Entries       int   // index entries
	IndexBytes    int   // memory of the index (its slot tables)
	PendingKeys   int   // keys with a queued operation
	QueuedBytes   int64 // bytes accepted, not yet written
	CleanRegions  int
	SealedRegions int
	Regions       int
	Filling       int // 1 while Filling: the device can take writes past the admission rate
}

// counters are the atomics behind Stats.
type counters struct {
	inserts, dropTooLarge, dropExpired, dropAdmission, dropQueue, dropAborted, removes atomic.Uint64
	gets, hits, pendingHits, readQueueFull, corruptions, collisions, expiredOnRead     atomic.Uint64
	ioErrors, batches, entriesWritten, bytesWritten, payload, writeFailed, supersed    atomic.Uint64
	reclaims, evictions, reinsertions, shadowTombs, shadowEarly                        atomic.Uint64
	recovered, recBatches, recSkipped, recTorn, recDamaged, recoveryNanos              atomic.Uint64
	tombsLost, panics, dropFill                                                        atomic.Uint64
	dropOffline, readTimeouts, offlineGets, outOfService                               atomic.Uint64
	copiedToQueue, copiedFromQueue, copiedDirect                                       atomic.Uint64
}

// Stats returns a snapshot. Gauges that walk shards (Entries,
// PendingKeys) cost O(shards).
func (e *Engine) Stats() Stats {
	c := &e.c
	clean, sealed := e.regions.counts()
	return Stats{
		Inserts: c.inserts.Load(), DropTooLarge: c.dropTooLarge.Load(), DropExpired: c.dropExpired.Load(),
		DropAdmission: c.dropAdmission.Load(), DropQueue: c.dropQueue.Load(), DropAborted: c.dropAborted.Load(),
		DropFill: c.dropFill.Load(), DropOffline: c.dropOffline.Load(), Removes: c.removes.Load(),
		Gets: c.gets.Load(), Hits: c.hits.Load(), PendingHits: c.pendingHits.Load(),
		ReadQueueFull: c.readQueueFull.Load(), Corruptions: c.corruptions.Load(),
		HashCollisions: c.collisions.Load(), ExpiredOnRead: c.expiredOnRead.Load(),
		ReadTimeouts: c.readTimeouts.Load(), OfflineGets: c.offlineGets.Load(),
		IOErrors: c.ioErrors.Load(), Batches: c.batches.Load(), EntriesWritten: c.entriesWritten.Load(),
		BytesWritten: c.bytesWritten.Load(), PayloadWritten: c.payload.Load(),
		WriteFailed: c.writeFailed.Load(), TombstonesLost: c.tombsLost.Load(), Superseded: c.supersed.Load(),
		CopiedToQueue: c.copiedToQueue.Load(), CopiedFromQueue: c.copiedFromQueue.Load(), CopiedDirect: c.copiedDirect.Load(),
		Reclaims: c.reclaims.Load(), Evictions: c.evictions.Load(), Reinsertions: c.reinsertions.Load(),
		ShadowTombstones: c.shadowTombs.Load(), ShadowEarlyZeroes: c.shadowEarly.Load(),
		Recovered: c.recovered.Load(), RecoveredBatches: c.recBatches.Load(),
		RecoverySkipped: c.recSkipped.Load(), RecoveryTornTails: c.recTorn.Load(),
		RecoveryDamaged:  c.recDamaged.Load(),
		RecoveryDuration: time.Duration(c.recoveryNanos.Load()), Panics: c.panics.Load(),
		OutOfService: c.outOfService.Load(), Online: !e.health.down(), AbandonedReads: e.rt.abandoned.Load(),
		ReadBuffersOut: e.bufs.out.Load(), BadReleases: e.bufs.bad.Load(),
		Entries: e.ix.len(), IndexBytes: e.ix.footprint(), PendingKeys: e.pending.len(), QueuedBytes: e.queued.Load(),
		CleanRegions: clean, SealedRegions: sealed, Regions: e.lay.regionCount, Filling: boolInt(e.Filling()),
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

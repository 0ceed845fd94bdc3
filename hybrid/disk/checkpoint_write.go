package disk

import (
	"errors"
	"fmt"
	"time"

	"strata/blockdev"
)

// errNoCheckpoint: Close found the engine in a state a checkpoint cannot
// describe; the next Open scans.
var errNoCheckpoint = errors.New("disk: no checkpoint")

// writeCheckpoint writes the index, the region states and the hot set
// into clean regions (each from its second block, so the region header
// stays zero and a scan still sees the region clean), syncs, then writes
// the descriptor beside both superblock copies. REQUIRES: every flusher,
// reclaimer and I/O worker has stopped, and every write has returned.
func (e *Engine) writeCheckpoint() error {
	t0 := time.Now()
	e.makeCheckpointRoom()
	c, err := e.snapshot()
	if err != nil {
		return err
	}
	bs, per := e.lay.blockSize, e.lay.regionSize-e.lay.blockSize
	n := int64(c.size())
	need := int((n + per - 1) / per)
	var where []uint32
	for id, r := range c.regions {
		if len(where) == need {
			break
		}
		if r.seq == 0 && e.regions.regions[id].state.Load() == regionClean {
			where = append(where, uint32(id))
		}
	}
	if len(where) < need || need > maxDescRegions(int(bs)) {
		return fmt.Errorf("%w: it needs %d clean regions, %d are clean (at most %d can be listed)",
			errNoCheckpoint, need, len(where), maxDescRegions(int(bs)))
	}
	buf := blockdev.AlignedBuffer(int(alignUp(n, bs)), int(bs))
	crc := c.encode(buf)
	for i, r := range where {
		lo := int64(i) * per
		hi := min(lo+per, int64(len(buf)))
		if _, err := e.dev.WriteAt(buf[lo:hi], e.lay.regionBase(r)+bs); err != nil {
			return fmt.Errorf("disk: write checkpoint: %w", err)
		}
	}
	if err := e.dev.Sync(); err != nil {
		return fmt.Errorf("disk: sync checkpoint: %w", err)
	}
	d := ckptDesc{instance: e.inst, length: uint64(n), crc: crc, regions: where}
	if err := e.writeSuperblock(&e.sb, &d); err != nil {
		return err
	}
	e.opts.Logger.Info("disk: index checkpoint written", "entries", len(c.entries)/2, "hot_keys", len(c.hot),
		"bytes", n, "regions", len(where), "took", time.Since(t0))
	return nil
}

// ckptReclaimShare bounds the regions Close may reclaim to make room for
// the checkpoint: one in ckptReclaimShare of the device's.
var ckptReclaimShare = 16

// makeCheckpointRoom reclaims the oldest regions (with the gate shut,
// pick takes the oldest whatever the picker, so no tombstone is due)
// while the clean ones cannot hold the checkpoint: a device in steady
// state keeps only CleanRegions clean, about 1 M entries' worth each at
// 16 MiB. It gives
// up past one region in ckptReclaimShare; the checkpoint is then
// skipped. The reclaimers have stopped and the gate is shut, so no entry
// is reinserted. REQUIRES: as writeCheckpoint.
func (e *Engine) makeCheckpointRoom() {
	e.hotMu.Lock()
	hot := len(e.hotOut)
	e.hotMu.Unlock()
	per := e.lay.regionSize - e.lay.blockSize
	size := int64(ckptHeaderSize + e.lay.regionCount*ckptRegionRec + e.ix.len()*ckptEntryRec + hot*ckptHotRec)
	need := int((size + per - 1) / per)
	budget := max(e.lay.regionCount/ckptReclaimShare, 1)
	if need > maxDescRegions(int(e.lay.blockSize)) || need-len(e.regions.clean) > budget {
		return
	}
	s, n := newScan(e), 0
	for len(e.regions.clean) < need && e.reclaimOne(s) {
		n++
	}
	if n > 0 {
		e.opts.Logger.Info("disk: close: reclaimed the oldest regions to hold the index checkpoint", "regions", n)
	}
}

// snapshot collects what the checkpoint holds.
func (e *Engine) snapshot() (*checkpoint, error) {
	switch {
	case e.health.down():
		return nil, fmt.Errorf("%w: the disk is out of service", errNoCheckpoint)
	case e.queued.Load() != 0 || e.pending.len() != 0:
		return nil, fmt.Errorf("%w: writes are still pending", errNoCheckpoint)
	}
	c := &checkpoint{instance: e.inst, maxSeq: e.seq.Load()}
	empty := make(map[uint32]bool) // regions a flusher took but never wrote
	for _, f := range e.flush {
		if f.hasRegion && f.cursor == 0 {
			empty[f.region] = true
		}
	}
	rs := e.regions
	rs.mu.Lock()
	c.nextSeq = rs.nextSeq
	c.regions = make([]ckptRegion, len(rs.regions))
	for id := range rs.regions {
		r := &rs.regions[id]
		switch st := r.state.Load(); {
		case st == regionClean, st == regionWriting && empty[uint32(id)]:
		case st == regionSealed, st == regionWriting:
			c.regions[id] = ckptRegion{seq: r.seq, tombs: uint32(r.tombs.Load())}
		default:
			rs.mu.Unlock()
			return nil, fmt.Errorf("%w: region %d is being reclaimed", errNoCheckpoint, id)
		}
	}
	rs.mu.Unlock()
	c.entries = make([]uint64, 0, 2*e.ix.len())
	for i := range e.ix.shardCount() {
		e.ix.rangeShard(i, func(h, v uint64) bool {
			c.entries = append(c.entries, h, v)
			return true
		})
	}
	e.hotMu.Lock()
	c.hot = e.hotOut
	e.hotMu.Unlock()
	if n := len(c.entries) / 2; len(c.hot) > n { // more hot keys than entries: the rest are not on disk
		c.hot = c.hot[:n]
	}
	return c, nil
}

package disk

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"strata/blockdev"
)

// recover opens or formats the superblock, then rebuilds the index from
// the regions' index records: newest sequence wins, tombstones and expired
// entries delete. Regions holding data become sealed (in region-sequence
// order, so FIFO reclaim survives a restart); the others are clean.
func (e *Engine) recover() error {
	fresh, err := e.openSuperblock()
	if err != nil {
		return err
	}
	if fresh {
		e.ix = newIndex(0)
		for i := range e.lay.regionCount {
			e.regions.clean <- uint32(i)
		}
		return nil
	}
	if e.desc != nil && e.opts.Recovery != RecoveryStrict { // strict reads every entry: it scans
		err := e.loadCheckpoint(e.desc)
		if err == nil {
			return nil
		}
		e.opts.Logger.Warn("disk: index checkpoint not used; scanning the regions", "reason", err)
	}
	return e.rebuild()
}

// openSuperblock reads both copies. It formats the device (fresh=true)
// when recovery is none, when no copy exists, when the layout changed, or
// (quiet only) when both copies are damaged; strict refuses the latter.
// A single damaged copy is rewritten from the good one.
func (e *Engine) openSuperblock() (fresh bool, err error) {
	bs := int(e.lay.blockSize)
	want := superblock{blockSize: uint32(bs), regionSize: uint64(e.lay.regionSize),
		regionCount: uint32(e.lay.regionCount), bufferSize: uint32(e.opts.BufferSize), dataStart: uint64(e.lay.dataStart)}
	if e.opts.Recovery == RecoveryNone {
		return true, e.format(want)
	}
	buf := blockdev.AlignedBuffer(superblockCopies*bs, bs)
	if _, err := e.dev.ReadAt(buf, 0); err != nil {
		return false, fmt.Errorf("disk: read superblock: %w", err)
	}
	var good []int
	var sb superblock
	corrupt, hadDesc := false, false
	for i := range superblockCopies {
		s, err := parseSuperblock(buf[i*bs:])
		switch {
		case err == nil:
			if len(good) == 0 {
				sb = s
			}
			good = append(good, i)
			hadDesc = e.takeDesc(buf[i*bs:(i+1)*bs]) || hadDesc
		case errors.Is(err, ErrCorrupt):
			corrupt = true
		}
	}
	switch {
	case len(good) == 0 && corrupt && e.opts.Recovery == RecoveryStrict:
		return false, fmt.Errorf("disk: open: both superblock copies damaged: %w", ErrCorrupt)
	case len(good) == 0:
		if corrupt {
			e.opts.Logger.Warn("disk: both superblock copies damaged; formatting")
		}
		return true, e.format(want)
	}
	sb2 := sb
	sb2.instance, sb2.created = 0, 0
	if sb2 != want {
		e.opts.Logger.Warn("disk: device layout changed; formatting", "old", fmt.Sprintf("%+v", sb2), "new", fmt.Sprintf("%+v", want))
		return true, e.format(want)
	}
	e.inst, e.sb = sb.instance, sb
	switch {
	case len(good) < superblockCopies:
		e.opts.Logger.Warn("disk: one superblock copy damaged; rewriting it")
		return false, e.writeSuperblock(&sb, nil)
	case hadDesc:
		// The checkpoint is read once: cleared before anything else is
		// written, so a crash from here on scans (see loadCheckpoint).
		return false, e.writeSuperblock(&sb, nil)
	}
	return false, nil
}

// format clears both superblock copies, zeroes every region header, then
// writes a new superblock with a fresh instance id. After it, each region
// header is zero or written by this instance, so recovery can tell a
// damaged header from an unused one, whatever the device held before (a
// raw device's old bytes, regions of another layout). A crash before the
// new superblock lands leaves none, and the next open formats again.
func (e *Engine) format(s superblock) error {
	if err := e.wipeHeaders(); err != nil {
		return err
	}
	s.instance = rand.Uint64() | 1
	s.created = time.Now().UnixNano()
	e.inst, e.sb, e.desc = s.instance, s, nil
	return e.writeSuperblock(&s, nil)
}

// wipeHeaders zeroes both superblock copies, syncs, zeroes the first
// block of every region and syncs again, so no write of the new
// superblock can land before them.
func (e *Engine) wipeHeaders() error {
	bs := int(e.lay.blockSize)
	if _, err := e.dev.WriteAt(blockdev.AlignedBuffer(superblockCopies*bs, bs), 0); err != nil {
		return fmt.Errorf("disk: format: clear superblock: %w", err)
	}
	if err := e.dev.Sync(); err != nil {
		return fmt.Errorf("disk: format: sync: %w", err)
	}
	for i := range e.lay.regionCount {
		if _, err := e.dev.WriteAt(e.zeroBlk, e.lay.regionBase(uint32(i))); err != nil {
			return fmt.Errorf("disk: format: zero region %d header: %w", i, err)
		}
	}
	if err := e.dev.Sync(); err != nil {
		return fmt.Errorf("disk: format: sync: %w", err)
	}
	return nil
}

// writeSuperblock writes copy 0, syncs, then copy 1, so a torn write
// damages at most one copy. With d the block carries a checkpoint
// descriptor after the superblock; without, that space is zero, so every
// rewrite of the superblock drops a checkpoint.
func (e *Engine) writeSuperblock(s *superblock, d *ckptDesc) error {
	bs := int(e.lay.blockSize)
	buf := blockdev.AlignedBuffer(bs, bs)
	putSuperblock(buf, s)
	if d != nil {
		putDesc(buf, d)
	}
	for i := range superblockCopies {
		if _, err := e.dev.WriteAt(buf, int64(i*bs)); err != nil {
			return fmt.Errorf("disk: write superblock: %w", err)
		}
		if err := e.dev.Sync(); err != nil {
			return fmt.Errorf("disk: sync superblock: %w", err)
		}
	}
	return nil
}

// scanned is what one region's scan found.
type scanned struct {
	id    uint32
	inUse bool
	seq   uint64
	recs  []record
	err   error
}

// rebuild scans the regions RecoveryConcurrency at a time and merges
// their records into the index as they arrive.
func (e *Engine) rebuild() error {
	ids := make(chan uint32, e.lay.regionCount)
	for i := range e.lay.regionCount {
		ids <- uint32(i)
	}
	close(ids)
	out := make(chan scanned, e.opts.RecoveryConcurrency)
	var wg sync.WaitGroup
	for range e.opts.RecoveryConcurrency {
		wg.Add(1)
		go e.scanRegions(ids, out, &wg)
	}
	go func() { wg.Wait(); close(out) }()

	e.ix = newIndex(0)
	m := merge{e: e, seqs: make(map[uint64]uint64), now: e.opts.Now().UnixNano()}
	var firstErr error
	for r := range out {
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		m.add(&r)
	}
	if firstErr != nil {
		if e.opts.Recovery == RecoveryStrict && errors.Is(firstErr, ErrCorrupt) {
			return fmt.Errorf("disk: open: strict recovery refused a damaged device (quiet recovery would drop the damaged part): %w", firstErr)
		}
		return fmt.Errorf("disk: open: recovery: %w", firstErr)
	}
	m.finish()
	return nil
}

func (e *Engine) scanRegions(ids <-chan uint32, out chan<- scanned, wg *sync.WaitGroup) {
	defer wg.Done()
	s := newScan(e)
	for id := range ids {
		s.reset(id, e.opts.Recovery == RecoveryStrict)
		r := scanned{id: id}
		var rh regionHeader
		rh, r.inUse, r.err = s.walk(func(recs []record) { r.recs = append(r.recs, recs...) })
		r.seq = rh.seq
		e.c.recBatches.Add(uint64(s.batches))
		e.c.recSkipped.Add(uint64(s.skipped))
		e.c.recTorn.Add(uint64(s.torn))
		if s.damaged != nil {
			e.dropDamaged(id, s.damaged)
		}
		out <- r
	}
}

// dropDamaged logs and counts region id, whose header is damaged (quiet
// recovery), and zeroes the header: the region's batches are not trusted,
// its data is lost, and it is reused as a clean region, so the next open
// does not report it again.
func (e *Engine) dropDamaged(id uint32, why error) {
	e.c.recDamaged.Add(1)
	e.opts.Logger.Warn("disk: recovery: region header damaged; its data is dropped and the region reused",
		"region", id, "reason", why)
	if _, err := e.dev.WriteAt(e.zeroBlk, e.lay.regionBase(id)); err != nil {
		e.c.ioErrors.Add(1)
		e.opts.Logger.Error("disk: recovery: zero damaged region header", "region", id, "err", err)
	}
}

// merge folds scanned regions into the index.
type merge struct {
	e      *Engine
	seqs   map[uint64]uint64 // key hash → newest sequence seen
	now    int64
	inUse  []scanned // records dropped, for ordering
	maxSeq uint64
}

func (m *merge) add(r *scanned) {
	e := m.e
	if !r.inUse {
		e.regions.clean <- r.id
		return
	}
	var tombs int32
	for i := range r.recs {
		rec := &r.recs[i]
		m.maxSeq = max(m.maxSeq, rec.seq)
		if rec.tomb {
			tombs++
		}
		if s, ok := m.seqs[rec.hash]; ok && s >= rec.seq {
			continue
		}
		m.seqs[rec.hash] = rec.seq
		if rec.tomb || (rec.expiry != 0 && rec.expiry <= m.now) {
			e.ix.remove(rec.hash)
		} else {
			e.ix.set(rec.hash, e.lay.pack(r.id, rec.offset, rec.length))
		}
	}
	e.regions.regions[r.id].tombs.Store(tombs)
	r.recs = nil
	m.inUse = append(m.inUse, *r)
}

// finish seals the regions in sequence order, computes live bytes and
// sets the sequence counters past everything found.
func (m *merge) finish() {
	e := m.e
	slices.SortFunc(m.inUse, func(a, b scanned) int {
		if a.seq < b.seq {
			return -1
		}
		return 1
	})
	rs := e.regions
	for _, r := range m.inUse {
		reg := &rs.regions[r.id]
		reg.seq = r.seq
		reg.state.Store(regionSealed)
		rs.sealed = append(rs.sealed, r.id)
		rs.nextSeq = max(rs.nextSeq, r.seq+1)
	}
	for i := range e.ix.shardCount() {
		e.ix.rangeShard(i, func(_, v uint64) bool {
			reg, _, length := e.lay.unpack(v)
			rs.regions[reg].live.Add(int64(length))
			return true
		})
	}
	e.seq.Store(m.maxSeq)
	e.c.recovered.Store(uint64(e.ix.len()))
	damaged := e.c.recDamaged.Load()
	e.opts.Logger.Info("disk: recovered", "entries", e.ix.len(), "regions", len(m.inUse),
		"batches", e.c.recBatches.Load(), "skipped", e.c.recSkipped.Load(), "torn", e.c.recTorn.Load(),
		"damaged_regions", damaged)
	if damaged > 0 {
		e.opts.Logger.Warn("disk: recovery dropped regions with damaged headers", "regions", damaged)
	}
}

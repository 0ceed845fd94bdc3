package disk

import (
	"errors"
	"fmt"
	"sync"

	"strata/blockdev"
)

// Loading a checkpoint at Open. Each step either proves the checkpoint
// describes the device as it is, or gives up (an error) and Open scans
// the regions as after a crash. Nothing of the engine changes until every
// check has passed.
//
// Why a valid checkpoint is current: Close writes it after the last entry
// write and sync, and Open clears the descriptor (rewrites the
// superblock) before anything else is written, so while a descriptor is
// on the device no write of this engine has followed it. An engine that
// knows nothing of checkpoints (an older strata) ignores the descriptor
// and may write after it; every such write goes into a region it took
// clean, under a new region sequence, or zeroes a region it reclaims. So
// the checkpoint is also checked against every region header: a region
// it lists as clean must still have no header of this instance, a region
// it lists as holding data must still carry the same sequence. A
// checkpoint that passes describes every byte an index entry can point
// to.

// takeDesc parses the checkpoint descriptor in a superblock copy's block
// and keeps the first valid one. It reports whether the block held a
// descriptor at all (valid or not), which must then be cleared.
func (e *Engine) takeDesc(block []byte) bool {
	d, ok, err := parseDesc(block)
	switch {
	case !ok:
		return false
	case err != nil:
		e.opts.Logger.Warn("disk: checkpoint descriptor damaged; ignoring it", "err", err)
	case e.desc == nil:
		e.desc = &d
	}
	return true
}

// loadCheckpoint reads the checkpoint d points to, checks it against the
// device and, if it holds, installs its index and region states.
func (e *Engine) loadCheckpoint(d *ckptDesc) error {
	c, err := e.readCheckpoint(d)
	if err != nil {
		return err
	}
	if err := e.verifyHeaders(c); err != nil {
		return err
	}
	ix, err := e.checkpointIndex(c)
	if err != nil {
		return err
	}
	e.ix = ix
	m := merge{e: e, maxSeq: c.maxSeq}
	for id, r := range c.regions {
		if r.seq == 0 {
			e.regions.clean <- uint32(id)
			continue
		}
		e.regions.regions[id].tombs.Store(int32(r.tombs))
		m.inUse = append(m.inUse, scanned{id: uint32(id), seq: r.seq, inUse: true})
	}
	e.regions.nextSeq = c.nextSeq
	e.hotIn = c.hot
	e.opts.Logger.Info("disk: index checkpoint loaded", "entries", len(c.entries)/2, "hot_keys", len(c.hot))
	m.finish()
	return nil
}

// readCheckpoint reads and decodes the checkpoint d describes.
func (e *Engine) readCheckpoint(d *ckptDesc) (*checkpoint, error) {
	bs, per := e.lay.blockSize, e.lay.regionSize-e.lay.blockSize
	seen := make(map[uint32]bool, len(d.regions))
	for _, r := range d.regions {
		if int(r) >= e.lay.regionCount || seen[r] {
			return nil, fmt.Errorf("%w: checkpoint descriptor names region %d twice or out of range", ErrCorrupt, r)
		}
		seen[r] = true
	}
	switch {
	case d.instance != e.inst:
		return nil, fmt.Errorf("%w: checkpoint of instance %#x, device is %#x", ErrCorrupt, d.instance, e.inst)
	case d.length < ckptHeaderSize || d.length > uint64(len(d.regions))*uint64(per) || d.length > e.maxCheckpoint():
		return nil, fmt.Errorf("%w: checkpoint length %d for %d regions", ErrCorrupt, d.length, len(d.regions))
	}
	buf := blockdev.AlignedBuffer(int(alignUp(int64(d.length), bs)), int(bs))
	for i, r := range d.regions {
		lo := int64(i) * per
		hi := min(lo+per, int64(len(buf)))
		if lo >= hi {
			break
		}
		if _, err := e.dev.ReadAt(buf[lo:hi], e.lay.regionBase(r)+bs); err != nil {
			return nil, fmt.Errorf("read checkpoint: %w", err)
		}
	}
	c, err := decodeCheckpoint(buf[:d.length])
	if err != nil {
		return nil, err
	}
	switch {
	case c.instance != e.inst || len(c.regions) != e.lay.regionCount:
		return nil, fmt.Errorf("%w: checkpoint of another device (instance %#x, %d regions)", ErrCorrupt, c.instance, len(c.regions))
	case ckptCRC(buf[:d.length]) != d.crc:
		return nil, fmt.Errorf("%w: checkpoint is not the one its descriptor names", ErrCorrupt)
	}
	for _, r := range d.regions {
		if c.regions[r].seq != 0 {
			return nil, fmt.Errorf("%w: checkpoint lies in region %d, which it lists as holding data", ErrCorrupt, r)
		}
	}
	return c, nil
}

// maxCheckpoint is the longest checkpoint this device can have: every
// region full of the smallest entries, each also a hot key. A longer
// one is refused before anything is allocated for it.
func (e *Engine) maxCheckpoint() uint64 {
	entries := uint64(e.lay.regionCount) * uint64(e.lay.regionSize) / (entryHeaderSize + indexRecordSize)
	return ckptHeaderSize + uint64(e.lay.regionCount)*ckptRegionRec + entries*(ckptEntryRec+ckptHotRec)
}

// errStale: the device changed after the checkpoint was written.
var errStale = errors.New("disk: checkpoint is older than the device's regions")

// verifyHeaders reads every region header, RecoveryConcurrency at a time,
// and checks it against c (see the top of this file).
func (e *Engine) verifyHeaders(c *checkpoint) error {
	ids := make(chan int, len(c.regions))
	for i := range c.regions {
		ids <- i
	}
	close(ids)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	bs := int(e.lay.blockSize)
	for range min(e.opts.RecoveryConcurrency, len(c.regions)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := blockdev.AlignedBuffer(bs, bs)
			for id := range ids {
				if err := e.checkHeader(b, id, c.regions[id].seq); err != nil {
					mu.Lock()
					first = cmpFirst(first, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func cmpFirst(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// checkHeader reads region id's header into b and checks it holds what
// a region of sequence seq (0: clean) has.
func (e *Engine) checkHeader(b []byte, id int, seq uint64) error {
	if _, err := e.dev.ReadAt(b, e.lay.regionBase(uint32(id))); err != nil {
		return fmt.Errorf("read region %d header: %w", id, err)
	}
	h, err := parseRegionHeader(b)
	switch {
	case errors.Is(err, errNoRegionHeader):
		if seq == 0 {
			return nil
		}
	case err != nil:
		return fmt.Errorf("region %d: %w", id, err)
	case seq == 0 && h.instance != e.inst, seq != 0 && h.instance == e.inst && h.seq == seq:
		return nil
	}
	return fmt.Errorf("%w: region %d", errStale, id)
}

// checkpointIndex builds the index from c's entries, checking that each
// points inside a region c lists as holding data.
func (e *Engine) checkpointIndex(c *checkpoint) (*index, error) {
	ix := newIndex(len(c.entries) / 2)
	for i := 0; i < len(c.entries); i += 2 {
		h, v := c.entries[i], c.entries[i+1]
		r, off, length := e.lay.unpack(v)
		if int(r) >= len(c.regions) || c.regions[r].seq == 0 || length < entryHeaderSize ||
			int64(off) < regionHeaderSize || int64(off)+int64(length) > e.lay.regionSize {
			return nil, fmt.Errorf("%w: checkpoint entry %d points outside the regions with data", ErrCorrupt, i/2)
		}
		if _, dup := ix.set(h, v); dup {
			return nil, fmt.Errorf("%w: checkpoint lists key hash %#x twice", ErrCorrupt, h)
		}
	}
	return ix, nil
}

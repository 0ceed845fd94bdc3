package disk

import (
	"encoding/binary"
	"errors"
	"fmt"

	"strata/blockdev"
)

// scan walks the batch chain of one region through an aligned read
// window, for recovery and reclaim. It reads region header, batch headers
// and index records (and, in strict mode, whole batches to verify every
// entry), never more than one window at a time.
type scan struct {
	e      *Engine
	win    []byte
	region uint32
	base   int64
	winOff int64 // region offset of win[0]
	winLen int
	strict bool
	recs   []record

	batches, skipped, torn int
	damaged                error // the region header's damage (not strict)
}

// scanMin is the smallest read the scan issues, so chains of small
// batches cost few reads.
const scanMin = 64 << 10

// errChainEnd: no further batch of this region's current life.
var errChainEnd = errors.New("disk: end of batch chain")

func newScan(e *Engine) *scan {
	bs := int(e.lay.blockSize)
	return &scan{e: e, win: blockdev.AlignedBuffer(max(e.opts.BufferSize, scanMin)+2*bs, bs)}
}

func (s *scan) reset(r uint32, strict bool) {
	s.region, s.base, s.strict = r, s.e.lay.regionBase(r), strict
	s.winLen, s.batches, s.skipped, s.torn, s.damaged = 0, 0, 0, 0, nil
}

// bytes returns region bytes [off, off+n), reading through the window.
func (s *scan) bytes(off, n int64) ([]byte, error) {
	if off >= s.winOff && off+n <= s.winOff+int64(s.winLen) {
		return s.win[off-s.winOff : off-s.winOff+n], nil
	}
	bs, rsz := s.e.lay.blockSize, s.e.lay.regionSize
	start := alignDown(off, bs)
	end := min(max(alignUp(off+n, bs), start+scanMin), rsz, start+int64(len(s.win)))
	if off < 0 || off+n > end {
		return nil, fmt.Errorf("%w: read [%d,+%d) outside region window", ErrCorrupt, off, n)
	}
	s.winLen = 0
	if _, err := s.e.dev.ReadAt(s.win[:end-start], s.base+start); err != nil {
		return nil, fmt.Errorf("%w: region %d read: %v", ErrCorrupt, s.region, err)
	}
	s.winOff, s.winLen = start, int(end-start)
	return s.win[off-start : off-start+n], nil
}

// walk calls fn with the records of every valid batch, in write order. It
// reports whether the region holds data of this instance (see header). A
// damaged batch followed by a valid one is committed data: an ErrCorrupt
// error in strict mode, skipped otherwise. A damaged batch with no valid
// successor is a torn tail and ends the walk in every mode.
func (s *scan) walk(fn func(recs []record)) (regionHeader, bool, error) {
	rh, ok, err := s.header()
	if !ok || err != nil {
		return rh, false, err
	}
	pos, rsz, bs := int64(regionHeaderSize), s.e.lay.regionSize, s.e.lay.blockSize
	for pos+batchHeaderSize <= rsz {
		recs, length, err := s.batch(pos, rh.seq, s.strict)
		if errors.Is(err, errChainEnd) {
			break
		}
		if err != nil {
			next := alignUp(pos+length, bs)
			if length == 0 || !s.validAt(next, rh.seq) {
				s.torn++
				break
			}
			if s.strict {
				return rh, true, fmt.Errorf("region %d offset %d: %w", s.region, pos, err)
			}
			s.skipped++
			pos = next
			continue
		}
		s.batches++
		fn(recs)
		pos = alignUp(pos+length, bs)
	}
	return rh, true, nil
}

// header reads the region header; ok means it names this instance. An
// all-zero header, or an intact one naming another instance (written
// before the last format), is a region holding nothing. A damaged header
// is an ErrCorrupt error in strict mode; otherwise it is kept in
// s.damaged and the region holds nothing: its batches are not trusted.
func (s *scan) header() (rh regionHeader, ok bool, err error) {
	b, err := s.bytes(0, regionHeaderSize)
	if err != nil {
		return rh, false, err
	}
	rh, err = parseRegionHeader(b)
	switch {
	case err == nil:
		return rh, rh.instance == s.e.inst, nil
	case errors.Is(err, errNoRegionHeader):
		return rh, false, nil
	case s.strict:
		return rh, false, fmt.Errorf("region %d header: %w", s.region, err)
	}
	s.damaged = err
	return rh, false, nil
}

func (s *scan) validAt(pos int64, seq uint64) bool {
	if pos+batchHeaderSize > s.e.lay.regionSize {
		return false
	}
	_, _, err := s.batch(pos, seq, false)
	return err == nil
}

// batch decodes the batch at pos. length is the batch length whenever the
// header's geometry was readable (so a caller can look past a damaged
// batch), 0 otherwise.
func (s *scan) batch(pos int64, seq uint64, verifyEntries bool) ([]record, int64, error) {
	hb, err := s.bytes(pos, batchHeaderSize)
	if err != nil {
		return nil, 0, err
	}
	if binary.LittleEndian.Uint32(hb) != batchMagic {
		return nil, 0, errChainEnd
	}
	h, err := parseBatchHeader(hb, pos, s.e.lay.regionSize)
	if err != nil {
		return nil, 0, err
	}
	if int(h.length) > s.e.opts.BufferSize {
		return nil, 0, fmt.Errorf("%w: batch length %d over buffer size", ErrCorrupt, h.length)
	}
	var hdr [batchHeaderSize]byte
	copy(hdr[:], hb)
	length := int64(h.length)
	rb, err := s.bytes(pos+int64(h.recOff), int64(h.count)*indexRecordSize)
	if err == nil {
		err = verifyBatch(hdr[:], rb)
	}
	if err != nil {
		return nil, length, err
	}
	if h.instance != s.e.inst || h.regionSeq != seq {
		return nil, 0, errChainEnd // left from an earlier life of the region
	}
	s.recs = s.recs[:0]
	for i := range int(h.count) {
		r := getRecord(rb[i*indexRecordSize:])
		if err := checkRecord(&r, pos, &h); err != nil {
			return nil, length, err
		}
		s.recs = append(s.recs, r)
	}
	if verifyEntries {
		if err := s.verifyEntries(pos, length); err != nil {
			return nil, length, err
		}
	}
	return s.recs, length, nil
}

// verifyEntries checks every entry of the batch at pos against its record.
func (s *scan) verifyEntries(pos, length int64) error {
	bb, err := s.bytes(pos, length)
	if err != nil {
		return err
	}
	for i := range s.recs {
		r := &s.recs[i]
		off := int64(r.offset) - pos
		h, _, _, err := decodeEntry(bb[off : off+int64(r.length)])
		if err != nil {
			return err
		}
		if h.hash != r.hash || h.seq != r.seq || h.tombstone() != r.tomb {
			return fmt.Errorf("%w: entry at %d disagrees with its record", ErrCorrupt, r.offset)
		}
	}
	return nil
}

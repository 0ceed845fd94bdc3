package disk

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The index checkpoint: what a clean Close leaves so that the next Open
// need not scan the regions. Its byte map is in doc.go ("Checkpoint");
// this file encodes and decodes it, with every length checked before it
// is used, since the bytes come back from the device.

const (
	ckptMagic      = uint64(0x3150434b41525453) // "STRACKP1"
	ckptDescMagic  = uint64(0x3144434b41525453) // "STRACKD1"
	ckptHeaderSize = 64
	ckptRegionRec  = 16 // u64 region sequence (0 = clean), u32 tombstones, u32 zero
	ckptEntryRec   = 16 // u64 key hash, u64 index value
	ckptHotRec     = 8  // u64 key hash
	// ckptDescOff is where the descriptor sits in each superblock copy's
	// block: after the 64-byte superblock, in bytes every version of the
	// engine writes as zero and never reads, so an engine that predates
	// checkpoints opens the device as before and ignores it.
	ckptDescOff   = superblockSize
	ckptDescFixed = 40 // descriptor bytes before its region list
)

// checkpoint is a decoded checkpoint.
type checkpoint struct {
	instance uint64
	maxSeq   uint64 // the engine's last entry sequence
	nextSeq  uint64 // the next region sequence
	regions  []ckptRegion
	entries  []uint64 // pairs: hash, index value
	hot      []uint64 // key hashes, hottest first
}

type ckptRegion struct {
	seq   uint64 // 0: clean
	tombs uint32
}

func (c *checkpoint) size() int {
	return ckptHeaderSize + len(c.regions)*ckptRegionRec + len(c.entries)/2*ckptEntryRec + len(c.hot)*ckptHotRec
}

// encode writes c into b (at least c.size() bytes) and returns the
// checksum it stored, which the descriptor repeats.
func (c *checkpoint) encode(b []byte) uint32 {
	n := c.size()
	b = b[:n]
	le := binary.LittleEndian
	le.PutUint64(b[0:], ckptMagic)
	le.PutUint64(b[8:], c.instance)
	le.PutUint64(b[16:], c.maxSeq)
	le.PutUint64(b[24:], c.nextSeq)
	le.PutUint32(b[32:], uint32(len(c.regions)))
	le.PutUint32(b[36:], uint32(len(c.entries)/2))
	le.PutUint32(b[40:], uint32(len(c.hot)))
	le.PutUint32(b[44:], 0)
	le.PutUint64(b[48:], uint64(n))
	p := ckptHeaderSize
	for _, r := range c.regions {
		le.PutUint64(b[p:], r.seq)
		le.PutUint32(b[p+8:], r.tombs)
		le.PutUint32(b[p+12:], 0)
		p += ckptRegionRec
	}
	for _, w := range c.entries {
		le.PutUint64(b[p:], w)
		p += 8
	}
	for _, h := range c.hot {
		le.PutUint64(b[p:], h)
		p += 8
	}
	le.PutUint32(b[60:], 0)
	crc := crc32.Update(crc32.Checksum(b[:56], castagnoli), castagnoli, b[ckptHeaderSize:])
	le.PutUint32(b[56:], crc)
	return crc
}

// ckptLen returns the total length a checkpoint header at the start of b
// announces, after checking its magic (errors wrap ErrCorrupt).
func ckptLen(b []byte) (int, error) {
	if len(b) < ckptHeaderSize || binary.LittleEndian.Uint64(b) != ckptMagic {
		return 0, fmt.Errorf("%w: no checkpoint header", ErrCorrupt)
	}
	n := binary.LittleEndian.Uint64(b[48:])
	if n < ckptHeaderSize || n > 1<<40 {
		return 0, fmt.Errorf("%w: checkpoint length %d", ErrCorrupt, n)
	}
	return int(n), nil
}

// decodeCheckpoint parses and verifies a checkpoint. The slices of the
// result are new (b may be reused). Every failure wraps ErrCorrupt.
func decodeCheckpoint(b []byte) (*checkpoint, error) {
	n, err := ckptLen(b)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	nr, ne, nh := uint64(le.Uint32(b[32:])), uint64(le.Uint32(b[36:])), uint64(le.Uint32(b[40:]))
	want := ckptHeaderSize + nr*ckptRegionRec + ne*ckptEntryRec + nh*ckptHotRec
	if uint64(n) != want || n > len(b) || le.Uint32(b[44:]) != 0 || le.Uint32(b[60:]) != 0 {
		return nil, fmt.Errorf("%w: checkpoint geometry regions=%d entries=%d hot=%d len=%d of %d",
			ErrCorrupt, nr, ne, nh, n, len(b))
	}
	b = b[:n]
	crc := crc32.Update(crc32.Checksum(b[:56], castagnoli), castagnoli, b[ckptHeaderSize:])
	if want := le.Uint32(b[56:]); crc != want {
		return nil, fmt.Errorf("%w: checkpoint checksum %#x, want %#x", ErrCorrupt, crc, want)
	}
	c := &checkpoint{instance: le.Uint64(b[8:]), maxSeq: le.Uint64(b[16:]), nextSeq: le.Uint64(b[24:])}
	c.regions = make([]ckptRegion, nr)
	p := ckptHeaderSize
	for i := range c.regions {
		if le.Uint32(b[p+12:]) != 0 {
			return nil, fmt.Errorf("%w: checkpoint region %d record", ErrCorrupt, i)
		}
		c.regions[i] = ckptRegion{seq: le.Uint64(b[p:]), tombs: le.Uint32(b[p+8:])}
		p += ckptRegionRec
	}
	c.entries = make([]uint64, 2*ne)
	for i := range c.entries {
		c.entries[i] = le.Uint64(b[p:])
		p += 8
	}
	c.hot = make([]uint64, nh)
	for i := range c.hot {
		c.hot[i] = le.Uint64(b[p:])
		p += 8
	}
	return c, nil
}

// ckptDesc is the checkpoint descriptor kept beside the superblock: where
// the checkpoint lies (the regions it was written into, each from its
// second block, in order) and its length and checksum.
type ckptDesc struct {
	instance uint64
	length   uint64
	crc      uint32
	regions  []uint32
}

// maxDescRegions is how many regions a descriptor can list in a block of
// bs bytes.
func maxDescRegions(bs int) int { return (bs - ckptDescOff - ckptDescFixed) / 4 }

// putDesc writes d into a superblock copy's block b (after the superblock).
func putDesc(b []byte, d *ckptDesc) {
	le := binary.LittleEndian
	p := b[ckptDescOff:]
	le.PutUint64(p[0:], ckptDescMagic)
	le.PutUint64(p[8:], d.instance)
	le.PutUint64(p[16:], d.length)
	le.PutUint32(p[24:], d.crc)
	le.PutUint32(p[28:], uint32(len(d.regions)))
	le.PutUint32(p[32:], 0)
	for i, r := range d.regions {
		le.PutUint32(p[ckptDescFixed+4*i:], r)
	}
	end := ckptDescFixed + 4*len(d.regions)
	crc := crc32.Update(crc32.Checksum(p[:32], castagnoli), castagnoli, p[ckptDescFixed:end])
	le.PutUint32(p[36:], crc)
}

// parseDesc reads the descriptor from a superblock copy's block. ok is
// false when there is none (no magic); a damaged one is an error wrapping
// ErrCorrupt.
func parseDesc(b []byte) (d ckptDesc, ok bool, err error) {
	if len(b) < ckptDescOff+ckptDescFixed {
		return d, false, nil
	}
	le := binary.LittleEndian
	p := b[ckptDescOff:]
	if le.Uint64(p) != ckptDescMagic {
		return d, false, nil
	}
	n := int(le.Uint32(p[28:]))
	end := ckptDescFixed + 4*n
	if n == 0 || n > maxDescRegions(len(b)) || le.Uint32(p[32:]) != 0 {
		return d, true, fmt.Errorf("%w: checkpoint descriptor lists %d regions", ErrCorrupt, n)
	}
	crc := crc32.Update(crc32.Checksum(p[:32], castagnoli), castagnoli, p[ckptDescFixed:end])
	if crc != le.Uint32(p[36:]) {
		return d, true, fmt.Errorf("%w: checkpoint descriptor checksum", ErrCorrupt)
	}
	d = ckptDesc{instance: le.Uint64(p[8:]), length: le.Uint64(p[16:]), crc: le.Uint32(p[24:])}
	d.regions = make([]uint32, n)
	for i := range d.regions {
		d.regions[i] = le.Uint32(p[ckptDescFixed+4*i:])
	}
	return d, true, nil
}

// ckptCRC returns the checksum stored in an encoded checkpoint's header.
func ckptCRC(b []byte) uint32 { return binary.LittleEndian.Uint32(b[56:]) }

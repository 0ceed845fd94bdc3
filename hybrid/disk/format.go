package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// On-disk format of the engine. All integers are little-endian; every
// structure carries a magic and a CRC-32C (Castagnoli, hardware-accelerated
// on amd64/arm64). See doc.go for the byte map and the reasons.

const (
	formatVersion = 1

	pack = 8 // entries and batches are packed at this granularity

	superblockSize    = 64
	regionHeaderSize  = 32
	batchHeaderSize   = 40
	entryHeaderSize   = 40
	indexRecordSize   = 32
	superblockMagic   = uint64(0x3130424b41525453) // "STRAKB01"
	regionMagic       = uint32(0x4e474552)         // "REGN"
	batchMagic        = uint32(0x48435442)         // "BTCH"
	entryMagic        = uint32(0x59544e45)         // "ENTY"
	entryFlagTomb     = uint8(1)
	recTombBit        = uint32(1) << 31
	maxEntryKeyLen    = 1<<16 - 1
	maxEntryValueLen  = 1<<31 - 1
	maxEncodedEntry   = 1 << 30
	superblockCopies  = 2
	superblockVersion = formatVersion
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func alignUp(n, a int64) int64   { return (n + a - 1) / a * a }
func alignDown(n, a int64) int64 { return n / a * a }

// entrySize is the packed size of an entry with the given key and value
// lengths: header, key, value, padded to pack.
func entrySize(klen, vlen int) int {
	return int(alignUp(int64(entryHeaderSize+klen+vlen), pack))
}

// entry is a decoded entry header.
type entry struct {
	flags  uint8
	keyLen int
	valLen int
	hash   uint64
	seq    uint64
	expiry int64 // unix nanoseconds; 0 = never
}

func (h *entry) tombstone() bool { return h.flags&entryFlagTomb != 0 }

// encodeEntry serialises an entry into dst, which must hold
// entrySize(len(key), len(value)) bytes, and returns that size. Pad bytes
// are zeroed so the buffer never carries stale bytes to disk.
func encodeEntry(dst []byte, h *entry, key, value []byte) int {
	n := entrySize(len(key), len(value))
	b := dst[:n]
	putEntryHeader(b, h, len(key), len(value))
	end := entryHeaderSize + copy(b[entryHeaderSize:], key)
	copy(b[end:], value)
	sealEntry(b)
	return n
}

// putEntryHeader writes an entry's header, checksum field zero, into b.
func putEntryHeader(b []byte, h *entry, klen, vlen int) {
	binary.LittleEndian.PutUint32(b[0:], entryMagic)
	b[4] = h.flags
	b[5] = formatVersion
	binary.LittleEndian.PutUint16(b[6:], uint16(klen))
	binary.LittleEndian.PutUint32(b[8:], uint32(vlen))
	binary.LittleEndian.PutUint32(b[12:], 0)
	binary.LittleEndian.PutUint64(b[16:], h.hash)
	binary.LittleEndian.PutUint64(b[24:], h.seq)
	binary.LittleEndian.PutUint64(b[32:], uint64(h.expiry))
}

// sealEntry zeroes the pad of the entry at the start of b, whose header
// (checksum field zero), key and value are in place, and sets its
// checksum.
func sealEntry(b []byte) {
	klen := int(binary.LittleEndian.Uint16(b[6:]))
	vlen := int(binary.LittleEndian.Uint32(b[8:]))
	end := entryHeaderSize + klen + vlen
	clear(b[end:entrySize(klen, vlen)])
	binary.LittleEndian.PutUint32(b[12:], crc32.Update(0, castagnoli, b[:end]))
}

// decodeEntry parses and verifies the entry at the start of b. key and
// value alias b. Every failure wraps ErrCorrupt.
func decodeEntry(b []byte) (h entry, key, value []byte, err error) {
	if len(b) < entryHeaderSize {
		return h, nil, nil, fmt.Errorf("%w: entry truncated (%d bytes)", ErrCorrupt, len(b))
	}
	if m := binary.LittleEndian.Uint32(b); m != entryMagic || b[5] != formatVersion {
		return h, nil, nil, fmt.Errorf("%w: entry magic %#x version %d", ErrCorrupt, m, b[5])
	}
	h.flags = b[4]
	h.keyLen = int(binary.LittleEndian.Uint16(b[6:]))
	h.valLen = int(binary.LittleEndian.Uint32(b[8:]))
	h.hash = binary.LittleEndian.Uint64(b[16:])
	h.seq = binary.LittleEndian.Uint64(b[24:])
	h.expiry = int64(binary.LittleEndian.Uint64(b[32:]))
	end := entryHeaderSize + h.keyLen + h.valLen
	if h.valLen > maxEntryValueLen || end > len(b) || end < entryHeaderSize {
		return h, nil, nil, fmt.Errorf("%w: entry lengths %d+%d exceed %d bytes", ErrCorrupt, h.keyLen, h.valLen, len(b))
	}
	want := binary.LittleEndian.Uint32(b[12:])
	crc := crc32.Update(0, castagnoli, b[:12])
	crc = crc32.Update(crc, castagnoli, zero4[:])
	crc = crc32.Update(crc, castagnoli, b[16:end])
	if crc != want {
		return h, nil, nil, fmt.Errorf("%w: entry checksum %#x, want %#x", ErrCorrupt, crc, want)
	}
	key = b[entryHeaderSize : entryHeaderSize+h.keyLen]
	value = b[entryHeaderSize+h.keyLen : end]
	return h, key, value, nil
}

var zero4 [4]byte

// record is one entry of a batch's index page: enough to rebuild the
// index, expire and reclaim without reading the entry itself.
type record struct {
	hash   uint64
	seq    uint64
	expiry int64
	offset uint32 // from the region start
	length uint32 // packed entry size in bytes
	tomb   bool
}

func putRecord(b []byte, r *record) {
	binary.LittleEndian.PutUint64(b[0:], r.hash)
	binary.LittleEndian.PutUint64(b[8:], r.seq)
	binary.LittleEndian.PutUint64(b[16:], uint64(r.expiry))
	binary.LittleEndian.PutUint32(b[24:], r.offset)
	l := r.length
	if r.tomb {
		l |= recTombBit
	}
	binary.LittleEndian.PutUint32(b[28:], l)
}

func getRecord(b []byte) record {
	l := binary.LittleEndian.Uint32(b[28:])
	return record{
		hash:   binary.LittleEndian.Uint64(b[0:]),
		seq:    binary.LittleEndian.Uint64(b[8:]),
		expiry: int64(binary.LittleEndian.Uint64(b[16:])),
		offset: binary.LittleEndian.Uint32(b[24:]),
		length: l &^ recTombBit,
		tomb:   l&recTombBit != 0,
	}
}

// batch is a decoded batch header. A batch is what one flush writes:
// [header][entries...][index records], the records at recOff.
type batch struct {
	instance  uint64
	regionSeq uint64
	length    uint32 // header + entries + records, unpadded
	count     uint32
	recOff    uint32
}

func putBatchHeader(b []byte, h *batch, records []byte) {
	binary.LittleEndian.PutUint32(b[0:], batchMagic)
	binary.LittleEndian.PutUint64(b[8:], h.instance)
	binary.LittleEndian.PutUint64(b[16:], h.regionSeq)
	binary.LittleEndian.PutUint32(b[24:], h.length)
	binary.LittleEndian.PutUint32(b[28:], h.count)
	binary.LittleEndian.PutUint32(b[32:], h.recOff)
	binary.LittleEndian.PutUint32(b[36:], 0)
	crc := crc32.Update(0, castagnoli, b[8:batchHeaderSize])
	crc = crc32.Update(crc, castagnoli, records)
	binary.LittleEndian.PutUint32(b[4:], crc)
}

// parseBatchHeader checks the magic and the geometry of a batch header
// found at offset start of a region of regionSize bytes; the checksum needs
// the records too and is checked by verifyBatch.
func parseBatchHeader(b []byte, start, regionSize int64) (batch, error) {
	var h batch
	if len(b) < batchHeaderSize || binary.LittleEndian.Uint32(b) != batchMagic {
		return h, fmt.Errorf("%w: no batch header", ErrCorrupt)
	}
	h.instance = binary.LittleEndian.Uint64(b[8:])
	h.regionSeq = binary.LittleEndian.Uint64(b[16:])
	h.length = binary.LittleEndian.Uint32(b[24:])
	h.count = binary.LittleEndian.Uint32(b[28:])
	h.recOff = binary.LittleEndian.Uint32(b[32:])
	recEnd := int64(h.recOff) + int64(h.count)*indexRecordSize
	switch {
	case int64(h.length) < batchHeaderSize || start+int64(h.length) > regionSize,
		int64(h.recOff) < batchHeaderSize, recEnd != int64(h.length):
		return h, fmt.Errorf("%w: batch geometry len=%d count=%d recOff=%d", ErrCorrupt, h.length, h.count, h.recOff)
	}
	return h, nil
}

// verifyBatch checks the header+records checksum; hdr and records are the
// header bytes and the records bytes of one batch.
func verifyBatch(hdr, records []byte) error {
	crc := crc32.Update(0, castagnoli, hdr[8:batchHeaderSize])
	crc = crc32.Update(crc, castagnoli, records)
	if want := binary.LittleEndian.Uint32(hdr[4:]); crc != want {
		return fmt.Errorf("%w: batch checksum %#x, want %#x", ErrCorrupt, crc, want)
	}
	return nil
}

// checkRecord verifies that a record describes an entry inside its batch's
// entry area [start+batchHeaderSize, start+recOff).
func checkRecord(r *record, start int64, h *batch) error {
	lo, hi := start+batchHeaderSize, start+int64(h.recOff)
	off, end := int64(r.offset), int64(r.offset)+int64(r.length)
	if off < lo || end > hi || r.length < entryHeaderSize || off%pack != 0 {
		return fmt.Errorf("%w: record [%d,%d) outside batch [%d,%d)", ErrCorrupt, off, end, lo, hi)
	}
	return nil
}

// regionHeader opens every region that holds data.
type regionHeader struct {
	instance uint64
	seq      uint64
}

func putRegionHeader(b []byte, h regionHeader) {
	binary.LittleEndian.PutUint32(b[0:], regionMagic)
	binary.LittleEndian.PutUint64(b[8:], h.instance)
	binary.LittleEndian.PutUint64(b[16:], h.seq)
	binary.LittleEndian.PutUint32(b[24:], formatVersion)
	binary.LittleEndian.PutUint32(b[28:], 0)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:regionHeaderSize], castagnoli))
}

// errNoRegionHeader: all header bytes are zero, as format and reclaim
// leave a region: it holds nothing.
var errNoRegionHeader = errors.New("disk: no region header")

var zeroRegionHeader [regionHeaderSize]byte

// parseRegionHeader decodes the header at the start of a region. An
// all-zero header is errNoRegionHeader; any other that fails its magic,
// checksum or version wraps ErrCorrupt (damage, or a write torn inside a
// sector). The caller compares the instance id.
func parseRegionHeader(b []byte) (regionHeader, error) {
	var h regionHeader
	switch {
	case len(b) < regionHeaderSize:
		return h, fmt.Errorf("%w: region header truncated (%d bytes)", ErrCorrupt, len(b))
	case bytes.Equal(b[:regionHeaderSize], zeroRegionHeader[:]):
		return h, errNoRegionHeader
	}
	if m := binary.LittleEndian.Uint32(b); m != regionMagic {
		return h, fmt.Errorf("%w: region header magic %#x", ErrCorrupt, m)
	}
	crc, want := crc32.Checksum(b[8:regionHeaderSize], castagnoli), binary.LittleEndian.Uint32(b[4:])
	if crc != want {
		return h, fmt.Errorf("%w: region header checksum %#x, want %#x", ErrCorrupt, crc, want)
	}
	if v := binary.LittleEndian.Uint32(b[24:]); v != formatVersion {
		return h, fmt.Errorf("%w: region header version %d", ErrCorrupt, v)
	}
	h.instance, h.seq = binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])
	return h, nil
}

// superblock describes the device layout. It sits in blocks 0 and 1.
type superblock struct {
	blockSize   uint32
	regionSize  uint64
	regionCount uint32
	bufferSize  uint32
	dataStart   uint64
	instance    uint64
	created     int64
}

func putSuperblock(b []byte, s *superblock) {
	clear(b[:superblockSize])
	binary.LittleEndian.PutUint64(b[0:], superblockMagic)
	binary.LittleEndian.PutUint32(b[8:], superblockVersion)
	binary.LittleEndian.PutUint32(b[12:], s.blockSize)
	binary.LittleEndian.PutUint64(b[16:], s.regionSize)
	binary.LittleEndian.PutUint32(b[24:], s.regionCount)
	binary.LittleEndian.PutUint32(b[28:], s.bufferSize)
	binary.LittleEndian.PutUint64(b[32:], s.dataStart)
	binary.LittleEndian.PutUint64(b[40:], s.instance)
	binary.LittleEndian.PutUint64(b[48:], uint64(s.created))
	binary.LittleEndian.PutUint32(b[56:], crc32.Checksum(b[:56], castagnoli))
}

// errNoSuperblock: the block holds no superblock magic (a fresh device).
var errNoSuperblock = fmt.Errorf("disk: no superblock")

// parseSuperblock decodes one copy. A missing magic is errNoSuperblock; a
// present magic with a bad checksum or version wraps ErrCorrupt.
func parseSuperblock(b []byte) (superblock, error) {
	var s superblock
	if len(b) < superblockSize || binary.LittleEndian.Uint64(b) != superblockMagic {
		return s, errNoSuperblock
	}
	if crc32.Checksum(b[:56], castagnoli) != binary.LittleEndian.Uint32(b[56:]) {
		return s, fmt.Errorf("%w: superblock checksum", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != superblockVersion {
		return s, fmt.Errorf("%w: superblock version %d", ErrCorrupt, v)
	}
	s.blockSize = binary.LittleEndian.Uint32(b[12:])
	s.regionSize = binary.LittleEndian.Uint64(b[16:])
	s.regionCount = binary.LittleEndian.Uint32(b[24:])
	s.bufferSize = binary.LittleEndian.Uint32(b[28:])
	s.dataStart = binary.LittleEndian.Uint64(b[32:])
	s.instance = binary.LittleEndian.Uint64(b[40:])
	s.created = int64(binary.LittleEndian.Uint64(b[48:]))
	return s, nil
}

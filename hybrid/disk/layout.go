package disk

import (
	"fmt"
	"math/bits"

	"strata/blockdev"
)

// layout is the geometry of a formatted device and the packing of index
// values.
//
// Index value (uint64), from the low bit up:
//
//	bit 0                  accessed: read since written (reinsertion hint)
//	bits 1 .. 1+lenBits    packed entry size / 8
//	next offBits           entry offset in its region / 8
//	remaining high bits    region number
//
// offBits = log2(RegionSize/8) and lenBits fits BufferSize/8, so the widths
// follow the configuration: 16 MiB regions and 4 MiB buffers leave 21 bits
// for the region number (2 M regions, 32 TiB). Open refuses a device
// with more regions than fit.
type layout struct {
	blockSize   int64
	regionSize  int64
	regionCount int
	dataStart   int64
	lenBits     uint
	offBits     uint
	maxEntry    int // largest packed entry a batch can hold
}

const idxAccessed = uint64(1)

func newLayout(dev blockdev.Device, o *Options) (layout, error) {
	bs := int64(dev.BlockSize())
	l := layout{blockSize: bs, regionSize: o.RegionSize, dataStart: superblockCopies * bs}
	if o.RegionSize%bs != 0 || int64(o.BufferSize)%bs != 0 {
		return l, fmt.Errorf("%w: region_size %d and buffer_size %d must be multiples of the block size %d",
			ErrDevice, o.RegionSize, o.BufferSize, bs)
	}
	n := (dev.Size() - l.dataStart) / o.RegionSize
	if n < int64(o.Flushers)+2 {
		return l, fmt.Errorf("%w: %d bytes hold %d regions of %d, need flushers+2 = %d",
			ErrDevice, dev.Size(), max(n, 0), o.RegionSize, o.Flushers+2)
	}
	l.regionCount = int(n)
	l.offBits = uint(bits.Len64(uint64(o.RegionSize/pack - 1)))
	l.lenBits = uint(bits.Len64(uint64(o.BufferSize / pack)))
	// The first batch of a region also carries the region header; the
	// records of a one-entry batch follow the entry.
	l.maxEntry = o.BufferSize - regionHeaderSize - batchHeaderSize - indexRecordSize
	if regBits := 64 - 1 - l.lenBits - l.offBits; regBits < 63 && n > int64(1)<<regBits {
		return l, fmt.Errorf("%w: %d regions exceed the %d-bit region field; raise region_size", ErrDevice, n, regBits)
	}
	return l, nil
}

// regionBase is the device offset of region r.
func (l *layout) regionBase(r uint32) int64 { return l.dataStart + int64(r)*l.regionSize }

// pack builds an index value for an entry of length bytes at offset in
// region r. REQUIRES: offset and length are multiples of pack and fit.
func (l *layout) pack(r uint32, offset, length uint32) uint64 {
	return uint64(r)<<(1+l.lenBits+l.offBits) | uint64(offset/pack)<<(1+l.lenBits) | uint64(length/pack)<<1
}

// unpack splits an index value.
func (l *layout) unpack(v uint64) (r uint32, offset, length uint32) {
	length = uint32(v>>1&(1<<l.lenBits-1)) * pack
	offset = uint32(v>>(1+l.lenBits)&(1<<l.offBits-1)) * pack
	r = uint32(v >> (1 + l.lenBits + l.offBits))
	return
}

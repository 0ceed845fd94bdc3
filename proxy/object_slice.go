package proxy

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// A body slice entry (one Store entry under sliceKey(objectKey, i)):
//
//	"SL" | version u8 | 0 u8 | gen u64 | index u32 | length u32 |
//	crc32c(the 20 bytes before it) u32 | data
//
// gen ties the slice to the record that lists it: slices left by an
// older or failed fill of the same key never mix into a response.
// (A slice fetch for a Range request writes its slices under the gen of
// the stored record it completes when their validators match: see
// adoptRecord.)
//
// Since version 2 the CRC covers the header, not the data: the data's
// bytes are checked where they can go bad, by the hybrid cache's own
// entry checksum when they are read back from disk (see object.go). A
// slice of another version is errRecordVersion: never served.
const (
	sliceHeaderLen = 2 + 1 + 1 + 8 + 4 + 4 + 4
	sliceSumOff    = sliceHeaderLen - 4
)

// appendSliceHeader appends the header of slice i holding data to dst.
func appendSliceHeader(dst []byte, gen uint64, i int, data []byte) []byte {
	start := len(dst)
	dst = append(dst, 'S', 'L', objectVersion, 0)
	dst = binary.BigEndian.AppendUint64(dst, gen)
	dst = binary.BigEndian.AppendUint32(dst, uint32(i))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(data)))
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// decodeSlice checks that v is slice i of generation gen with wantLen
// bytes and returns its data (borrowing v).
func decodeSlice(v []byte, gen uint64, i, wantLen int) ([]byte, error) {
	return decodeSliceHead(v, len(v), gen, i, wantLen)
}

// decodeSliceHead is decodeSlice for a slice entry of total bytes whose
// first piece is v (the whole entry, or the first of the pieces a memory
// hit lends it in): it checks the header, which v must hold whole, and
// returns the data v holds after it.
func decodeSliceHead(v []byte, total int, gen uint64, i, wantLen int) ([]byte, error) {
	if len(v) < sliceHeaderLen || v[0] != 'S' || v[1] != 'L' || v[3] != 0 {
		return nil, fmt.Errorf("%w: slice header", ErrCorrupt)
	}
	if v[2] != objectVersion {
		return nil, errRecordVersion
	}
	switch {
	case crc32.Checksum(v[:sliceSumOff], crcTable) != binary.BigEndian.Uint32(v[sliceSumOff:]):
		return nil, fmt.Errorf("%w: slice header checksum", ErrCorrupt)
	case binary.BigEndian.Uint64(v[4:]) != gen:
		return nil, fmt.Errorf("%w: slice of another generation", ErrCorrupt)
	case binary.BigEndian.Uint32(v[12:]) != uint32(i):
		return nil, fmt.Errorf("%w: slice index", ErrCorrupt)
	case int(binary.BigEndian.Uint32(v[16:])) != wantLen || total-sliceHeaderLen != wantLen:
		return nil, fmt.Errorf("%w: slice length", ErrCorrupt)
	}
	return v[sliceHeaderLen:], nil
}

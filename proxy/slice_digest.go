package proxy

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
	"github.com/valyala/fasthttp"
)

// Slice digests: objects without a strong validator.
//
// A slice of a stored object may go missing (evicted, refused by the disk
// tier's admission or its write queue, found damaged). With a strong
// validator it is fetched again with a Range request whose answer must
// name the same validator (RFC 9111 §3.4). Without one, nothing in an
// answer proves that its bytes belong to the representation stored, so
// such an object used to be fetched again whole, and every Range request
// for one of its lost slices started a fill of the whole object.
//
// So a fill of a sliced object without a strong validator records the
// xxhash64 of each slice's data as it stores it, and the committed record
// lists them (flagDigests). A slice fetched again is accepted only if its
// total length matches and its bytes hash to the recorded digest; until it
// is checked no reader sees a byte of it, and a mismatch fails the fetch
// (errChanged): the response is a miss, or, past its status line, ends
// short. What a client receives is byte for byte what was first stored.
// The 206 does not renew the record's freshness: it proves the bytes, not
// the representation's metadata. Cost: 8 bytes of record per slice (8 KiB
// for 1 GiB of 1 MiB slices) and hashing each slice once when stored
// and once when fetched again (xxhash64, ~10 GB/s).

// hasDigests reports whether o lists its slices' digests.
func (o *object) hasDigests() bool { return len(o.Digests) > 0 }

// digest returns the recorded digest of slice i. REQUIRES: o.hasDigests().
func (o *object) digest(i int) uint64 { return binary.BigEndian.Uint64(o.Digests[8*i:]) }

// refetchable reports whether a missing slice of o may be fetched from the
// origin with a Range request: o is a 200 with a strong validator, or with
// its slices' digests, and its bytes are the origin's (not a coding strata
// made: compress_sliced.go).
func (o *object) refetchable() bool {
	return o.Status == fasthttp.StatusOK && !o.EdgeCoded && (hasValidator(o) || o.hasDigests())
}

// sliceDigest is the digest recorded for a slice's data.
func sliceDigest(data []byte) uint64 { return xxhash.Sum64(data) }

// sameRepresentation reports whether slices fetched under record a may be
// served as part of record b: both name the same validator, or both are
// the one record with slice digests (a fetch in digest mode completes the
// very record it was started from).
func sameRepresentation(a, b *object) bool {
	return sameValidator(a, b) || (a.hasDigests() && b.hasDigests() && a.Gen == b.Gen && a.BodyLen == b.BodyLen)
}

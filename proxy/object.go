package proxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// Stored format.
//
// An object is a record under metaKey(key) = 'm'|key: versioned, with status,
// end-to-end headers (hop-by-hop, Connection-listed, Content-Length, Age and
// Alt-Svc removed), request/response times, Date, Expires, Last-Modified, the
// origin's Age, lifetime, stale windows, ETag, Vary and secondary (variant)
// key, flags (must-revalidate, heuristic, inline, no-cache), body length,
// slice size, a random generation, the body inline when it fits one slice, and
// a CRC-32C of everything but the body. Larger bodies are slices under
// sliceKey(key, i) = 's'|key|i|len(key), each with a header (version,
// generation, index, length, CRC-32C of the header) checked before a byte is
// served.

// The stored record of an object (one Store entry under metaKey):
//
//	magic "STO" | version u8 | flags u8 | status u16 | gen u64 | sliceSize u32 |
//	bodyLen u64 | requestTime, responseTime, date, expires, lastModified i64
//	(Unix ns, 0 = absent) | ageHeader, lifetime, swr, sie i64 |
//	etag, vary, variantKey: uvarint length + bytes |
//	header block: uvarint length + "Name: value\r\n" lines (object_headers.go) |
//	body (bodyLen bytes, only with flagInline) | crc32c of all but the body u32
//
// All integers big-endian. A body longer than sliceSize is stored as
// ceil(bodyLen/sliceSize) slices (see object_slice.go). Decoding checks
// every length against what remains, so hostile bytes give ErrCorrupt,
// never a panic or an allocation sized by the input.
//
// Version 3 keeps the headers as a wire-form block. The CRC covers the
// metadata only (since version 2; version 1 covered the inline body too).
// The bytes of a body are checked where they can go bad: the hybrid
// cache verifies every entry it reads back from disk against its own checksum,
// and the memory tier is trusted (a store without such a check, as mapStore,
// gets none). Checking them again here cost 8-24% of the CPU of large hits in
// the peer benchmark (bench/peerbench: 256 KiB hits, 64 KiB objects in a
// working set four times the memory tier, a 256 MiB object streamed). A record
// of another version decodes as errRecordVersion, a miss, and is never served:
// the fill that follows overwrites it.
const (
	objectVersion   = 3
	objectFixedLen  = 3 + 1 + 1 + 2 + 8 + 4 + 8 + 5*8 + 4*8
	maxStoredHeader = 256 // headers per record
	// maxStoredFields is how many of an origin response's fields a fill's
	// record keeps: one fewer than it may hold, for the Date a fill adds
	// to a response without one (a 257th line would make the record
	// undecodable). Other records (a refresh's merge, a slice fetch's) add
	// none and keep maxStoredHeader.
	maxStoredFields = maxStoredHeader - 1
	maxBodyLen      = 1 << 50
)

var (
	objectMagic = [3]byte{'S', 'T', 'O'}
	crcTable    = crc32.MakeTable(crc32.Castagnoli)
	// errRecordVersion: a record or slice written by another format
	// version (an upgrade): a miss, not counted as corruption.
	errRecordVersion = fmt.Errorf("%w: stored format version", ErrCorrupt)
)

// isOldVersion reports whether err is a decoder's errRecordVersion.
func isOldVersion(err error) bool { return errors.Is(err, errRecordVersion) }

const (
	flagMustRevalidate = 1 << iota
	flagHeuristic
	flagInline
	// flagPartial: the record was built from a 206 (partial caching): any
	// of its slices may be missing and is then fetched from the origin
	// with a Range request. Such a record never holds its body inline. Decoders
	// before this flag refuse it (unknown flag bits), cleanly.
	flagPartial
	flagNoCache // response no-cache: every use revalidates
	// flagDigests: the record lists an xxhash64 of every body slice
	// (slice_digest.go), so that a slice of an object without a strong
	// validator can be fetched again with a Range request and its bytes
	// proved to be the ones first stored. Decoders before this flag refuse
	// it (unknown flag bits): a clean miss.
	flagDigests
	// flagEdgeCoded: the body is a content coding strata made
	// (compress.go), not bytes the origin sent: no Range request to the
	// origin can supply a slice of it. Decoders before this flag refuse
	// it (unknown flag bits): a clean miss.
	flagEdgeCoded
)

type headerKV struct{ Key, Value []byte }

// object is a decoded record. Decoded byte slices borrow the input: they
// are valid while the buffer passed to decodeObject is.
type object struct {
	Status                                                 int
	Gen                                                    uint64
	SliceSize                                              int
	BodyLen                                                int64
	RequestTime, ResponseTime, Date, Expires, LastModified time.Time
	AgeHeader                                              int64
	Lifetime, StaleWhileRevalidate, StaleIfError           time.Duration
	MustRevalidate, Heuristic, NoCache                     bool
	Partial                                                bool // flagPartial
	EdgeCoded                                              bool // flagEdgeCoded
	ETag, Vary, VariantKey                                 []byte
	Headers                                                []headerKV
	Digests                                                []byte // flagDigests: 8 bytes per slice, big-endian xxhash64
	Body                                                   []byte // inline body, when BodyLen <= SliceSize

	// HeaderBlock is Headers in wire form as the record holds it (decoded
	// records only; nil when there are none): see object_headers.go.
	HeaderBlock []byte
}

// inline reports whether the body lives in the record.
func (o *object) inline() bool { return !o.Partial && o.BodyLen <= int64(o.SliceSize) }

// slices returns how many body slices the object has outside its record.
func (o *object) slices() int {
	if o.inline() {
		return 0
	}
	return int((o.BodyLen + int64(o.SliceSize) - 1) / int64(o.SliceSize))
}

// sliceLen returns the length of slice i.
func (o *object) sliceLen(i int) int {
	return int(min(int64(o.SliceSize), o.BodyLen-int64(i)*int64(o.SliceSize)))
}

// appendObject appends the encoding of o to dst. REQUIRES: o.Body holds
// the whole body when o.inline().
func appendObject(dst []byte, o *object) []byte {
	dst, sum := appendObjectHead(dst, o)
	if o.inline() {
		dst = append(dst, o.Body[:o.BodyLen]...)
	}
	return binary.BigEndian.AppendUint32(dst, sum)
}

// appendObjectHead appends the encoding of o up to its inline body and
// returns it with the record's checksum: the record is that head, the
// inline body (o.inline()), then the checksum, big-endian.
func appendObjectHead(dst []byte, o *object) ([]byte, uint32) {
	return appendObjectHeadBlock(dst, o, nil)
}

// appendObjectHeadBlock is appendObjectHead with o's header block given in
// wire form, as appendHeaderBlock would write it for o.Headers without its
// length (a fill has it: appendStoredLines); nil encodes it from
// o.Headers.
func appendObjectHeadBlock(dst []byte, o *object, block []byte) ([]byte, uint32) {
	start := len(dst)
	dst = append(dst, objectMagic[:]...)
	dst = append(dst, objectVersion, o.flags())
	dst = binary.BigEndian.AppendUint16(dst, uint16(o.Status))
	dst = binary.BigEndian.AppendUint64(dst, o.Gen)
	dst = binary.BigEndian.AppendUint32(dst, uint32(o.SliceSize))
	dst = binary.BigEndian.AppendUint64(dst, uint64(o.BodyLen))
	for _, t := range [...]time.Time{o.RequestTime, o.ResponseTime, o.Date, o.Expires, o.LastModified} {
		dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(t)))
	}
	for _, d := range [...]int64{o.AgeHeader, int64(o.Lifetime), int64(o.StaleWhileRevalidate), int64(o.StaleIfError)} {
		dst = binary.BigEndian.AppendUint64(dst, uint64(d))
	}
	dst = appendBytes(appendBytes(appendBytes(dst, o.ETag), o.Vary), o.VariantKey)
	if block != nil {
		dst = append(binary.AppendUvarint(dst, uint64(len(block))), block...)
	} else {
		dst = appendHeaderBlock(dst, o.Headers)
	}
	if o.hasDigests() {
		dst = append(dst, o.Digests...)
	}
	return dst, crc32.Checksum(dst[start:], crcTable)
}

func (o *object) flags() byte {
	var f byte
	if o.MustRevalidate {
		f |= flagMustRevalidate
	}
	if o.Heuristic {
		f |= flagHeuristic
	}
	if o.inline() {
		f |= flagInline
	}
	if o.Partial {
		f |= flagPartial
	}
	if o.NoCache {
		f |= flagNoCache
	}
	if o.hasDigests() {
		f |= flagDigests
	}
	if o.EdgeCoded {
		f |= flagEdgeCoded
	}
	return f
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// decodeObject decodes b into o, reusing o.Headers' capacity. The decoded
// slices borrow b. It allocates only to grow o.Headers (up to
// maxStoredHeader entries). The fields are parsed (bounds-checked) before
// the checksum over them is verified, since the checksum's extent is known
// only then.
func decodeObject(o *object, b []byte) error {
	if len(b) < objectFixedLen+4 {
		return fmt.Errorf("%w: record of %d bytes", ErrCorrupt, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if [3]byte(body[:3]) != objectMagic {
		return fmt.Errorf("%w: record magic", ErrCorrupt)
	}
	if body[3] != objectVersion {
		return errRecordVersion
	}
	if err := o.decodeFixed(body); err != nil {
		return err
	}
	metaLen, err := o.decodeVar(body, objectFixedLen)
	if err != nil {
		return err
	}
	if crc32.Checksum(body[:metaLen], crcTable) != sum {
		return fmt.Errorf("%w: record checksum", ErrCorrupt)
	}
	return nil
}

func (o *object) decodeFixed(b []byte) error {
	flags := b[4]
	o.MustRevalidate, o.Heuristic = flags&flagMustRevalidate != 0, flags&flagHeuristic != 0
	o.Partial = flags&flagPartial != 0
	o.NoCache = flags&flagNoCache != 0
	o.EdgeCoded = flags&flagEdgeCoded != 0
	o.Digests = nil
	if flags&flagDigests != 0 {
		o.Digests = b[:0] // non-nil: decodeVar takes the digests
	}
	o.Status = int(binary.BigEndian.Uint16(b[5:]))
	o.Gen = binary.BigEndian.Uint64(b[7:])
	o.SliceSize = int(binary.BigEndian.Uint32(b[15:]))
	o.BodyLen = int64(binary.BigEndian.Uint64(b[19:]))
	if o.Status < 100 || o.Status > 999 || o.SliceSize < 1 || o.SliceSize > 1<<30 ||
		o.BodyLen < 0 || o.BodyLen > maxBodyLen || (flags&flagInline != 0) != o.inline() || flags>>7 != 0 ||
		(o.Digests != nil && (o.inline() || o.Status != 200)) {
		return fmt.Errorf("%w: record fields", ErrCorrupt)
	}
	p := 27
	ts := [...]*time.Time{&o.RequestTime, &o.ResponseTime, &o.Date, &o.Expires, &o.LastModified}
	for _, t := range ts {
		*t = fromUnixNano(int64(binary.BigEndian.Uint64(b[p:])))
		p += 8
	}
	o.AgeHeader = int64(binary.BigEndian.Uint64(b[p:]))
	o.Lifetime = time.Duration(binary.BigEndian.Uint64(b[p+8:]))
	o.StaleWhileRevalidate = time.Duration(binary.BigEndian.Uint64(b[p+16:]))
	o.StaleIfError = time.Duration(binary.BigEndian.Uint64(b[p+24:]))
	return nil
}

// decodeVar decodes the fields of rec after its fixed part (from off) and
// the inline body, and returns the length of the metadata (rec up to the
// body).
func (o *object) decodeVar(rec []byte, off int) (int, error) {
	b := rec[off:]
	var ok bool
	if o.ETag, b, ok = takeBytes(b); !ok {
		return 0, fmt.Errorf("%w: etag", ErrCorrupt)
	}
	if o.Vary, b, ok = takeBytes(b); !ok {
		return 0, fmt.Errorf("%w: vary", ErrCorrupt)
	}
	if o.VariantKey, b, ok = takeBytes(b); !ok {
		return 0, fmt.Errorf("%w: variant key", ErrCorrupt)
	}
	b, err := o.decodeHeaderBlock(b)
	if err != nil {
		return 0, err
	}
	if o.Digests != nil {
		n := 8 * int64(o.slices())
		if n > int64(len(b)) {
			return 0, fmt.Errorf("%w: slice digests", ErrCorrupt)
		}
		o.Digests, b = b[:n:n], b[n:]
	}
	metaLen := len(rec) - len(b)
	o.Body = nil
	if o.inline() {
		if int64(len(b)) != o.BodyLen {
			return 0, fmt.Errorf("%w: inline body of %d bytes, want %d", ErrCorrupt, len(b), o.BodyLen)
		}
		if o.BodyLen > 0 {
			o.Body = b
		}
		b = nil
	}
	if len(b) != 0 {
		return 0, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b))
	}
	return metaLen, nil
}

// takeBytes splits a uvarint-length-prefixed field off b. Empty fields
// decode as nil so that decode(encode(x)) == x for nil fields.
func takeBytes(b []byte) (field, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, b, false
	}
	if n == 0 {
		return nil, b[k:], true
	}
	return b[k : k+int(n) : k+int(n)], b[k+int(n):], true
}

package proxy

import (
	"math"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// MaxRanges bounds the range-specs of one Range field; more are refused
// with ErrTooManyRanges (RFC 9110 §14.2 lets a server ignore a field with
// many ranges; Apache's CVE-2011-3192 showed why).
const MaxRanges = 64

// ByteRange is a satisfiable byte range, both ends inclusive:
// 0 <= Start <= End < size.
type ByteRange struct{ Start, End int64 }

// Len is the number of bytes in r.
func (r ByteRange) Len() int64 { return r.End - r.Start + 1 }

// ParseRange parses a Range field value v for a representation of size
// bytes (RFC 9110 §14.1.2, §14.2) and appends the satisfiable ranges to dst
// (pass dst[:0] to reuse a slice). The ranges it appends are sorted by
// Start, and ranges that overlap or touch are coalesced (§14.6 allows it),
// so they are disjoint, non-adjacent and within [0, size).
//
// Accepted: "bytes=" (unit case-insensitive) then a comma-separated list
// of "first-last", "first-" and "-suffix" with optional whitespace around
// elements; empty elements are skipped; numbers larger than int64 saturate.
// A last beyond the end is clamped; a suffix longer than the
// representation means all of it.
//
// Errors (dst returned unchanged): ErrBadRange for another unit, a syntax
// error, last < first, an empty set or size < 0 (ignore the field: 200);
// ErrTooManyRanges for more than MaxRanges specs (200 too);
// ErrUnsatisfiableRange when no spec overlaps the representation (416;
// a zero-length representation satisfies nothing). It does not allocate
// when dst has room.
func ParseRange(dst []ByteRange, v []byte, size int64) ([]ByteRange, error) {
	base := len(dst)
	set, ok := rangeUnit(v)
	if !ok || size < 0 {
		return dst, ErrBadRange
	}
	specs := 0
	for len(set) > 0 {
		var spec []byte
		spec, set = ageNextMember(set)
		if len(spec) == 0 {
			continue
		}
		if specs++; specs > MaxRanges {
			return dst[:base], ErrTooManyRanges
		}
		r, sat, ok := rangeSpec(spec, size)
		if !ok {
			return dst[:base], ErrBadRange
		}
		if sat {
			dst = append(dst, r)
		}
	}
	if specs == 0 {
		return dst[:base], ErrBadRange
	}
	if len(dst) == base {
		return dst, ErrUnsatisfiableRange
	}
	return rangeCoalesce(dst, base), nil
}

// rangeUnit checks the "bytes=" prefix and returns the range-set.
func rangeUnit(v []byte) ([]byte, bool) {
	sp := varyTrim(v, varySpan{0, len(v)})
	v = v[sp.s:sp.e]
	if len(v) < 6 || !ccEqualFold(v[:5], "bytes") || v[5] != '=' {
		return nil, false
	}
	return v[6:], true
}

// rangeSpec parses one range-spec. sat is false for a valid spec that
// the representation cannot satisfy; ok is false for a syntax error.
func rangeSpec(spec []byte, size int64) (r ByteRange, sat, ok bool) {
	first, last, dash := keyCut(spec, '-')
	if !dash {
		return r, false, false
	}
	if len(first) == 0 { // suffix-range
		n, ok := rangeNumber(last)
		if !ok {
			return r, false, false
		}
		if n == 0 || size == 0 {
			return r, false, true
		}
		return ByteRange{Start: max(0, size-n), End: size - 1}, true, true
	}
	a, ok := rangeNumber(first)
	if !ok {
		return r, false, false
	}
	b := int64(math.MaxInt64)
	if len(last) > 0 {
		if b, ok = rangeNumber(last); !ok || b < a {
			return r, false, false
		}
	}
	if a >= size {
		return r, false, true
	}
	return ByteRange{Start: a, End: min(b, size-1)}, true, true
}

// rangeNumber parses 1*DIGIT, saturating at MaxInt64.
func rangeNumber(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + d
	}
	return n, true
}

// rangeCoalesce sorts dst[base:] by Start (insertion sort: at most
// MaxRanges) and merges overlapping or adjacent ranges.
func rangeCoalesce(dst []ByteRange, base int) []ByteRange {
	rs := dst[base:]
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].Start < rs[j-1].Start; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	out := 0
	for i := 1; i < len(rs); i++ {
		if rs[i].Start <= rs[out].End+1 {
			rs[out].End = max(rs[out].End, rs[i].End)
			continue
		}
		out++
		rs[out] = rs[i]
	}
	return dst[:base+out+1]
}

// AppendContentRange appends a Content-Range value for r within size:
// "bytes 0-99/1000" (RFC 9110 §14.4).
func AppendContentRange(dst []byte, r ByteRange, size int64) []byte {
	dst = append(dst, "bytes "...)
	dst = strconv.AppendInt(dst, r.Start, 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, r.End, 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, size, 10)
}

// AppendUnsatisfiedRange appends the Content-Range value of a 416:
// "bytes */1000".
func AppendUnsatisfiedRange(dst []byte, size int64) []byte {
	dst = append(dst, "bytes */"...)
	return strconv.AppendInt(dst, size, 10)
}

// IfRange reports whether the Range of req applies to a stored response
// with the given ETag, Last-Modified and Date (RFC 9110 §13.1.5): true when
// If-Range is absent; for an entity-tag, when it matches etag strongly; for
// an HTTP-date, when it equals lastModified exactly and lastModified is a
// strong validator, i.e. at least 60 seconds before date (§8.8.2.2). An
// invalid If-Range is false. False means: ignore Range, send the whole
// representation with 200.
func IfRange(req *fasthttp.RequestHeader, etag []byte, lastModified, date time.Time) bool {
	lines := req.PeekAll(fasthttp.HeaderIfRange)
	if len(lines) == 0 {
		return true
	}
	if len(lines) > 1 {
		return false
	}
	v := lines[0]
	sp := varyTrim(v, varySpan{0, len(v)})
	v = v[sp.s:sp.e]
	if len(v) > 0 && v[0] == '"' || len(v) > 1 && v[0] == 'W' && v[1] == '/' {
		return ETagMatchStrong(v, etag)
	}
	t, ok := httpDate(v)
	if !ok || lastModified.IsZero() || date.IsZero() {
		return false
	}
	return t.Equal(lastModified) && date.Sub(lastModified) >= time.Minute
}

// AppendPartHeader appends the delimiter and header block that open one
// part of a multipart/byteranges body (RFC 9110 §14.6):
//
//	[CRLF] "--" boundary CRLF
//	"Content-Type: " contentType CRLF      (left out when contentType is empty)
//	"Content-Range: bytes first-last/size" CRLF
//	CRLF
//
// The CRLF before the delimiter is left out for the first part. After the
// last part's bytes, AppendPartsEnd closes the body; the response's
// Content-Type is "multipart/byteranges; boundary=" boundary. The boundary
// must not occur in the content: use a random one of at least 16 bytes.
func AppendPartHeader(dst []byte, first bool, boundary, contentType []byte, r ByteRange, size int64) []byte {
	if !first {
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "--"...)
	dst = append(dst, boundary...)
	dst = append(dst, "\r\n"...)
	if len(contentType) > 0 {
		dst = append(dst, "Content-Type: "...)
		dst = append(dst, contentType...)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "Content-Range: "...)
	dst = AppendContentRange(dst, r, size)
	return append(dst, "\r\n\r\n"...)
}

// AppendPartsEnd appends the close delimiter of a multipart/byteranges
// body: CRLF "--" boundary "--" CRLF.
func AppendPartsEnd(dst, boundary []byte) []byte {
	dst = append(dst, "\r\n--"...)
	dst = append(dst, boundary...)
	return append(dst, "--\r\n"...)
}

// MultipartLength is the exact length of the multipart/byteranges body
// that AppendPartHeader, the ranges' bytes and AppendPartsEnd produce, for
// its Content-Length.
func MultipartLength(ranges []ByteRange, boundary, contentType []byte, size int64) int64 {
	var n int64
	var digits [128]byte // a part header without boundary and type fits
	for i, r := range ranges {
		n += int64(len(AppendPartHeader(digits[:0], i == 0, nil, nil, r, size)))
		n += int64(len(boundary))
		if len(contentType) > 0 {
			n += int64(len("Content-Type: \r\n") + len(contentType))
		}
		n += r.Len()
	}
	return n + int64(len("\r\n----\r\n")+len(boundary))
}

package byterange

import (
	"bytes"
	"math"
)

// MaxSpecs bounds the range-specs of one Range field; more are refused
// with ErrTooMany (RFC 9110 §14.2 lets a server ignore a field with many
// ranges; Apache's CVE-2011-3192 showed why).
const MaxSpecs = 64

// Range is a satisfiable byte range, both ends inclusive:
// 0 <= Start <= End < size.
type Range struct{ Start, End int64 }

// Len is the number of bytes in r.
func (r Range) Len() int64 { return r.End - r.Start + 1 }

var (
	unitBytes = []byte("bytes")
	comma     = []byte(",")
	dash      = []byte("-")
	slash     = []byte("/")
)

// Parse parses a Range field value v for a representation of size bytes
// (RFC 9110 §14.1.2, §14.2) and appends the satisfiable ranges to dst
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
// Errors (dst returned unchanged): ErrInvalid for another unit, a syntax
// error, last < first, an empty set or size < 0 (ignore the field: 200);
// ErrTooMany for more than MaxSpecs specs (200 too); ErrUnsatisfiable
// when no spec overlaps the representation (416; a zero-length
// representation satisfies nothing). It does not allocate when dst has
// room.
func Parse(dst []Range, v []byte, size int64) ([]Range, error) {
	base := len(dst)
	set, ok := rangeSet(v)
	if !ok || size < 0 {
		return dst, ErrInvalid
	}
	specs := 0
	for len(set) > 0 {
		var spec []byte
		spec, set, _ = bytes.Cut(set, comma)
		spec = trimOWS(spec)
		if len(spec) == 0 {
			continue
		}
		if specs++; specs > MaxSpecs {
			return dst[:base], ErrTooMany
		}
		r, sat, ok := parseSpec(spec, size)
		if !ok {
			return dst[:base], ErrInvalid
		}
		if sat {
			dst = append(dst, r)
		}
	}
	if specs == 0 {
		return dst[:base], ErrInvalid
	}
	if len(dst) == base {
		return dst, ErrUnsatisfiable
	}
	return coalesce(dst, base), nil
}

// trimOWS trims optional whitespace (RFC 9110 §5.6.3: spaces and tabs).
func trimOWS(b []byte) []byte { return bytes.Trim(b, " \t") }

// hasUnit reports whether v starts with the unit "bytes" (any case)
// followed by sep. Both lengths equal and the unit ASCII, bytes.EqualFold
// compares ASCII case-insensitively.
func hasUnit(v []byte, sep byte) bool {
	return len(v) >= 6 && bytes.EqualFold(v[:5], unitBytes) && v[5] == sep
}

// rangeSet checks the "bytes=" prefix and returns the range-set.
func rangeSet(v []byte) ([]byte, bool) {
	v = trimOWS(v)
	if !hasUnit(v, '=') {
		return nil, false
	}
	return v[6:], true
}

// parseSpec parses one range-spec. sat is false for a valid spec that
// the representation cannot satisfy; ok is false for a syntax error.
func parseSpec(spec []byte, size int64) (r Range, sat, ok bool) {
	first, last, found := bytes.Cut(spec, dash)
	if !found {
		return r, false, false
	}
	if len(first) == 0 { // suffix-range
		n, ok := parseNumber(last)
		if !ok {
			return r, false, false
		}
		if n == 0 || size == 0 {
			return r, false, true
		}
		return Range{Start: max(0, size-n), End: size - 1}, true, true
	}
	a, ok := parseNumber(first)
	if !ok {
		return r, false, false
	}
	b := int64(math.MaxInt64)
	if len(last) > 0 {
		if b, ok = parseNumber(last); !ok || b < a {
			return r, false, false
		}
	}
	if a >= size {
		return r, false, true
	}
	return Range{Start: a, End: min(b, size-1)}, true, true
}

// parseNumber parses 1*DIGIT, saturating at MaxInt64.
func parseNumber(b []byte) (int64, bool) {
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

// coalesce sorts dst[base:] by Start (insertion sort: at most MaxSpecs)
// and merges overlapping or adjacent ranges.
func coalesce(dst []Range, base int) []Range {
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

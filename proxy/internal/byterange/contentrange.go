package byterange

import (
	"bytes"
	"strconv"
)

// AppendContentRange appends a Content-Range value for r within size:
// "bytes 0-99/1000" (RFC 9110 §14.4).
func AppendContentRange(dst []byte, r Range, size int64) []byte {
	dst = append(dst, "bytes "...)
	dst = strconv.AppendInt(dst, r.Start, 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, r.End, 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, size, 10)
}

// AppendUnsatisfied appends the Content-Range value of a 416:
// "bytes */1000".
func AppendUnsatisfied(dst []byte, size int64) []byte {
	dst = append(dst, "bytes */"...)
	return strconv.AppendInt(dst, size, 10)
}

// ParseContentRange parses a single-part Content-Range value
// "bytes first-last/complete" (RFC 9110 §14.4). An unknown complete
// length ("*"), an unsatisfied-range form, or last < first is refused.
func ParseContentRange(v []byte) (first, last, complete int64, ok bool) {
	v = trimOWS(v)
	if !hasUnit(v, ' ') {
		return 0, 0, 0, false
	}
	rng, size, found := bytes.Cut(v[6:], slash)
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := bytes.Cut(rng, dash)
	if !found {
		return 0, 0, 0, false
	}
	first, ok1 := parseNumber(a)
	last, ok2 := parseNumber(b)
	complete, ok3 := parseNumber(size)
	if !ok1 || !ok2 || !ok3 || last < first || last >= complete || complete == 1<<63-1 {
		return 0, 0, 0, false
	}
	return first, last, complete, true
}

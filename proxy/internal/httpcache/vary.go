package httpcache

import (
	"slices"
	"strconv"

	"github.com/valyala/fasthttp"
)

// maxVaryNames bounds the field names one Vary may list; a response
// varying on more is not cached (a guard against unbounded work per hit).
const maxVaryNames = 16

// maxVaryElems bounds the list elements of one request field that are
// sorted (Accept-Encoding); past it, elements keep their order.
const maxVaryElems = 32

// VaryKey appends to dst the secondary cache key (RFC 9111 §4.1) of req
// for a stored response whose Vary field value is vary (all Vary lines
// joined with ", ": AppendVary). It reports false when such a response can
// never be reused: Vary lists "*", a name that is not a token, or more
// than maxVaryNames names; dst is then returned unchanged. Store a response
// under the key built from the request that fetched it, and look it up
// with the key built from a new request and the stored response's Vary.
//
// Format, for each distinct field name, in ASCII order of the lower-cased
// names (so "Accept, Accept-Encoding" and "accept-encoding,ACCEPT" give the
// same key):
//
//	lower(name) ";"                                field absent from req
//	lower(name) "=" len ":" normalised-value ";"    present (len in decimal)
//
// Names are tokens, which hold neither '=' nor ';', and values are
// length-prefixed, so the key parses back in one way only: two different
// (name, value) sets never give the same key. Normalisation, applied to all
// lines of the field joined as one list:
//   - Accept-Encoding: elements lower-cased, whitespace removed (also around
//     ";" and "="), empty elements dropped, sorted and de-duplicated; q-values
//     are kept as sent ("gzip;q=0.5" differs from "gzip"). Coding names and
//     parameter names are case-insensitive (RFC 9110 §8.4.1, §12.4.2).
//   - Accept, Accept-Charset, Accept-Language: the same without sorting, as
//     order can carry preference between equal q-values.
//   - Any other field: each line trimmed, lines joined with ",", bytes kept.
//
// An absent field and an empty one differ (§4.1 matches absent only with
// absent). It does not allocate for field names up to 32 bytes (fasthttp's
// PeekAll takes a string).
func VaryKey(dst []byte, vary []byte, req *fasthttp.RequestHeader) ([]byte, bool) {
	if sp := trimSpan(vary, span{0, len(vary)}); compareFold(vary[sp.s:sp.e], HeaderAcceptEncoding) == 0 {
		// The Vary of every compressed object (compression at the edge)
		// and of most origins': one name, nothing to split or sort. A
		// hit of such an object computes this key; this path spares it a
		// third of the cost. Its key is varyKeyList's (FuzzVaryKey).
		dst = append(dst, aeLower...)
		return varyAppendValue(dst, dst[len(dst)-len(aeLower):], req.PeekAll(aeName)), true
	}
	return varyKeyList(dst, vary, req)
}

const (
	aeName  = "Accept-Encoding"
	aeLower = "accept-encoding"
)

// varyKeyList is VaryKey for any Vary list.
func varyKeyList(dst []byte, vary []byte, req *fasthttp.RequestHeader) ([]byte, bool) {
	var names [maxVaryNames]span
	n, ok := varyNames(vary, &names)
	if !ok {
		return dst, false
	}
	for _, sp := range names[:n] {
		name := vary[sp.s:sp.e]
		for _, c := range name {
			dst = append(dst, lower(c))
		}
		dst = varyAppendValue(dst, dst[len(dst)-len(name):], req.PeekAll(string(name)))
	}
	return dst, true
}

// varyStar reports whether the Vary field value v lists "*".
func varyStar(v []byte) bool {
	for len(v) > 0 {
		var m []byte
		m, v = nextMember(v)
		if len(m) == 1 && m[0] == '*' {
			return true
		}
	}
	return false
}

// AppendVary appends every Vary line of h to dst, joined with ", ".
func AppendVary(dst []byte, h *fasthttp.ResponseHeader) []byte {
	for i, line := range h.PeekAll(fasthttp.HeaderVary) {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, line...)
	}
	return dst
}

// varyNames collects the distinct names of the Vary value v into names,
// sorted case-insensitively.
func varyNames(v []byte, names *[maxVaryNames]span) (int, bool) {
	n := 0
	for i := 0; i < len(v); {
		s := i
		for i < len(v) && v[i] != ',' {
			i++
		}
		sp := trimSpan(v, span{s, i})
		i++
		if sp.s == sp.e {
			continue
		}
		name := v[sp.s:sp.e]
		if len(name) == 1 && name[0] == '*' || !isToken(name) {
			return 0, false
		}
		if varyHasName(v, names[:n], name) {
			continue
		}
		if n == maxVaryNames {
			return 0, false
		}
		names[n] = sp
		n++
	}
	slices.SortFunc(names[:n], func(a, b span) int {
		return compareFold(v[a.s:a.e], v[b.s:b.e])
	})
	return n, true
}

func varyHasName(v []byte, have []span, name []byte) bool {
	for _, h := range have {
		if compareFold(v[h.s:h.e], name) == 0 {
			return true
		}
	}
	return false
}

// varyAppendValue appends the encoded value of one field (lname is the
// lower-cased name already in dst) and the closing ";".
func varyAppendValue(dst, lname []byte, lines [][]byte) []byte {
	if len(lines) == 0 {
		return append(dst, ';')
	}
	dst = append(dst, '=')
	p := len(dst)
	switch string(lname) {
	case "accept-encoding":
		dst = varyAppendList(dst, lines, true)
	case "accept", "accept-charset", "accept-language":
		dst = varyAppendList(dst, lines, false)
	default:
		dst = varyAppendRaw(dst, lines)
	}
	return varyPrefixLen(dst, p)
}

// varyPrefixLen inserts the decimal length of dst[p:] and ':' before it,
// and appends ';', rotating in place so nothing is allocated.
func varyPrefixLen(dst []byte, p int) []byte {
	n := len(dst) - p
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, ':')
	tail := dst[p:]
	slices.Reverse(tail)
	k := len(tail) - n
	slices.Reverse(tail[:k])
	slices.Reverse(tail[k:])
	return append(dst, ';')
}

func varyAppendRaw(dst []byte, lines [][]byte) []byte {
	for i, l := range lines {
		if i > 0 {
			dst = append(dst, ',')
		}
		sp := trimSpan(l, span{0, len(l)})
		dst = append(dst, l[sp.s:sp.e]...)
	}
	return dst
}

// varyElem is one list element: lines[line][s:e].
type varyElem struct{ line, s, e int }

// varyEach calls f for each non-empty, trimmed element of the lines.
func varyEach(lines [][]byte, f func(e varyElem)) {
	for li, l := range lines {
		for i := 0; i < len(l); {
			s := i
			for i < len(l) && l[i] != ',' {
				i++
			}
			sp := trimSpan(l, span{s, i})
			i++
			if sp.s < sp.e {
				f(varyElem{li, sp.s, sp.e})
			}
		}
	}
}

// varyAppendList appends the elements normalised (lower case, no
// whitespace), joined with ','; sorted and de-duplicated when sorted is set
// and there are at most maxVaryElems of them.
func varyAppendList(dst []byte, lines [][]byte, sorted bool) []byte {
	var elems [maxVaryElems]varyElem
	n := 0
	varyEach(lines, func(e varyElem) {
		if n < len(elems) {
			elems[n] = e
		}
		n++
	})
	if !sorted || n > len(elems) {
		first := true
		varyEach(lines, func(e varyElem) {
			dst = varyAppendElem(dst, lines[e.line][e.s:e.e], &first)
		})
		return dst
	}
	list := elems[:n]
	slices.SortFunc(list, func(a, b varyElem) int {
		return varyCompareNorm(lines[a.line][a.s:a.e], lines[b.line][b.s:b.e])
	})
	first := true
	for i, e := range list {
		cur := lines[e.line][e.s:e.e]
		if i > 0 {
			p := list[i-1]
			if varyCompareNorm(lines[p.line][p.s:p.e], cur) == 0 {
				continue
			}
		}
		dst = varyAppendElem(dst, cur, &first)
	}
	return dst
}

func varyAppendElem(dst, elem []byte, first *bool) []byte {
	if !*first {
		dst = append(dst, ',')
	}
	*first = false
	for _, c := range elem {
		if c != ' ' && c != '\t' {
			dst = append(dst, lower(c))
		}
	}
	return dst
}

// varyCompareNorm compares two elements as varyAppendElem writes them.
func varyCompareNorm(a, b []byte) int {
	i, j := 0, 0
	for {
		for i < len(a) && (a[i] == ' ' || a[i] == '\t') {
			i++
		}
		for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
			j++
		}
		switch {
		case i == len(a) && j == len(b):
			return 0
		case i == len(a):
			return -1
		case j == len(b):
			return 1
		}
		if x, y := lower(a[i]), lower(b[j]); x != y {
			return int(x) - int(y)
		}
		i++
		j++
	}
}

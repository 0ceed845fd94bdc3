package proxy

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The header block of a record (format version 3).
//
// A record keeps its stored end-to-end fields as they go on the wire:
// "Name: value\r\n" per field, in the origin's order, each name in the
// canonical case fasthttp sends ("Content-Type", "Etag"; a name holding a
// byte outside the token set is left as it is, as fasthttp leaves it). The
// block is serialised once, when the record is encoded; a hit hands it to
// the response as it is (hit_headers.go): no name is normalised again and
// nothing is parsed to learn what it holds, and the block's bytes are the
// key under which the hit's prepared header is found.
//
// Encoding: uvarint length, then the block. A field the wire form cannot
// carry (an empty name, a name holding ':' CR or LF, a value holding CR or
// LF) is left out; fasthttp never parses such a field, so none reaches a
// record. The decoder accepts exactly what the encoder writes: canonical
// names, one space after the colon, CRLF line ends, at most maxStoredHeader
// fields. It fills object.Headers with views into the block, so the code
// that looks fields up by name is unchanged.

// appendHeaderBlock appends the encoded header block of kvs to dst.
func appendHeaderBlock(dst []byte, kvs []headerKV) []byte {
	n := 0
	for _, kv := range kvs {
		if wireField(kv) {
			n += len(kv.Key) + 2 + len(kv.Value) + 2
		}
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for _, kv := range kvs {
		if !wireField(kv) {
			continue
		}
		dst = appendCanonicalName(dst, kv.Key)
		dst = append(append(append(dst, ": "...), kv.Value...), "\r\n"...)
	}
	return dst
}

// wireField reports whether kv can be written as one header line. Byte
// loops, not bytes.IndexAny, which builds a byte set on every call: four
// calls per field were half the time a fill took to encode its header
// block (BenchmarkEncodeHeaderBlock).
func wireField(kv headerKV) bool {
	return wireName(kv.Key) && wireValue(kv.Value)
}

// wireName is wireField's rule for a name: not empty, no ':', CR or LF.
func wireName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c == ':' || c == '\r' || c == '\n' {
			return false
		}
	}
	return true
}

// wireValue is wireField's rule for a value: no CR or LF.
func wireValue(v []byte) bool {
	for _, c := range v {
		if c == '\r' || c == '\n' {
			return false
		}
	}
	return true
}

// decodeHeaderBlock decodes the header block at the start of b into
// o.HeaderBlock and o.Headers (reusing its capacity; both borrow b) and
// returns what follows it.
func (o *object) decodeHeaderBlock(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("%w: header block length", ErrCorrupt)
	}
	block, rest := b[k:k+int(n):k+int(n)], b[k+int(n):]
	o.HeaderBlock, o.Headers = nil, o.Headers[:0]
	if n > 0 {
		o.HeaderBlock = block
	}
	for len(block) > 0 {
		if len(o.Headers) == maxStoredHeader {
			return nil, fmt.Errorf("%w: header count", ErrCorrupt)
		}
		var kv headerKV
		var ok bool
		if kv, block, ok = cutHeaderLine(block); !ok {
			return nil, fmt.Errorf("%w: header line", ErrCorrupt)
		}
		o.Headers = append(o.Headers, kv)
	}
	return rest, nil
}

// cutHeaderLine splits the first "Name: value\r\n" line off block. ok is
// false unless the line is one appendHeaderBlock writes.
func cutHeaderLine(block []byte) (kv headerKV, rest []byte, ok bool) {
	end := bytes.IndexByte(block, '\n')
	if end < 1 || bytes.IndexByte(block[:end], '\r') != end-1 { // one CR, ending the line
		return kv, nil, false
	}
	line := block[: end-1 : end-1]
	colon := bytes.IndexByte(line, ':')
	if colon < 1 || colon+2 > len(line) || line[colon+1] != ' ' || !canonicalName(line[:colon]) {
		return kv, nil, false
	}
	kv.Key = line[:colon:colon]
	if v := line[colon+2:]; len(v) > 0 {
		kv.Value = v
	}
	return kv, block[end+1:], true
}

// appendCanonicalName appends name to dst in canonical case: as fasthttp
// normalises a header name ("content-type" → "Content-Type"), and as it is
// when it holds a byte outside the token set.
func appendCanonicalName(dst, name []byte) []byte {
	dst, _ = appendWireName(dst, name)
	return dst
}

// appendWireName appends name in canonical case (appendCanonicalName) and
// reports wireName of it, in one pass over a token name (a fill stores every field
// of its response this way: appendStoredLines).
func appendWireName(dst, name []byte) ([]byte, bool) {
	start := len(dst)
	dst = append(dst, name...)
	upper := true
	for i, c := range dst[start:] {
		switch nameClass[c] {
		case nonToken: // the name is left as it is
			copy(dst[start:], name)
			return dst, wireName(name)
		case lowerLetter:
			if upper {
				c -= 'a' - 'A'
				dst[start+i] = c
			}
		case upperLetter:
			if !upper {
				c += 'a' - 'A'
				dst[start+i] = c
			}
		}
		upper = c == '-'
	}
	return dst, len(name) > 0
}

// canonicalName reports whether name is in the case appendCanonicalName
// gives it. One pass: it runs on every hit's record.
func canonicalName(name []byte) bool {
	canonical, upper := true, true
	for _, c := range name {
		switch nameClass[c] {
		case nonToken:
			return true // left as it is
		case lowerLetter:
			canonical = canonical && !upper
		case upperLetter:
			canonical = canonical && upper
		}
		upper = c == '-'
	}
	return canonical
}

// Classes of a name's bytes: token characters (RFC 9110 §5.6.2) by case.
const (
	nonToken = iota
	lowerLetter
	upperLetter
	otherToken
)

var nameClass = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = otherToken
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = lowerLetter, upperLetter
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = otherToken
	}
	return t
}()

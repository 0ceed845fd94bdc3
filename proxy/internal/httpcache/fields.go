package httpcache

import "bytes"

// HopByHop reports whether the header named key must not be forwarded
// (RFC 9110 §7.6.1): the fixed hop-by-hop set, any Proxy-* header, and
// every name listed in the message's Connection header (conn).
func HopByHop(key, conn []byte) bool {
	if !asciiName(key) {
		return hopByHopFold(key, conn)
	}
	return hopByHopASCII(key, conn)
}

// hopByHopASCII is HopByHop for an ASCII name.
func hopByHopASCII(key, conn []byte) bool {
	switch len(key) {
	case len("TE"):
		if equalFold(key, "TE") {
			return true
		}
	case len("Trailer"): // and Upgrade
		if equalFold(key, "Trailer") || equalFold(key, "Upgrade") {
			return true
		}
	case len("Connection"): // and Keep-Alive
		if equalFold(key, "Connection") || equalFold(key, "Keep-Alive") {
			return true
		}
	case len("Transfer-Encoding"):
		if equalFold(key, "Transfer-Encoding") {
			return true
		}
	}
	if len(key) >= len("Proxy-") && equalFold(key[:len("Proxy-")], "Proxy-") {
		return true
	}
	return listed(conn, key)
}

// asciiName reports whether name is ASCII. A name that is not takes the
// Unicode case folding of bytes.EqualFold, under which the Kelvin sign
// matches 'k' and the long s 's' ("\u212aeep-Alive" is Keep-Alive to it):
// HopByHop and StoredField compare ASCII names by length and bytes first,
// the same answers for them, and keep the folding ones as they were.
func asciiName(name []byte) bool {
	for _, c := range name {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// hopByHopFold is HopByHop for a name that is not ASCII.
func hopByHopFold(key, conn []byte) bool {
	switch {
	case bytes.EqualFold(key, HeaderConnection), bytes.EqualFold(key, headerKeepAlive),
		bytes.EqualFold(key, headerTE), bytes.EqualFold(key, headerTrailer),
		bytes.EqualFold(key, HeaderTransferEncoding), bytes.EqualFold(key, headerUpgrade):
		return true
	case len(key) >= len(proxyPrefix) && bytes.EqualFold(key[:len(proxyPrefix)], proxyPrefix):
		return true
	}
	return listed(conn, key)
}

// listed reports whether the comma-separated token list contains name.
func listed(list, name []byte) bool {
	for len(list) > 0 {
		var tok []byte
		if i := bytes.IndexByte(list, ','); i >= 0 {
			tok, list = list[:i], list[i+1:]
		} else {
			tok, list = list, nil
		}
		if bytes.EqualFold(bytes.TrimSpace(tok), name) {
			return true
		}
	}
	return false
}

// StoredField reports whether an origin response header is kept in a
// stored record (and forwarded on a miss): end-to-end headers except the
// framing (Content-Length, set from the body), Age (recomputed), and
// Alt-Svc (a statement about the origin's connection, not the resource).
func StoredField(key, conn []byte) bool {
	if !asciiName(key) {
		return !hopByHopFold(key, conn) && !bytes.EqualFold(key, HeaderContentLength) &&
			!bytes.EqualFold(key, HeaderAge) && !bytes.EqualFold(key, headerAltSvc)
	}
	switch len(key) {
	case len("Content-Length"):
		if equalFold(key, "Content-Length") {
			return false
		}
	case len("Age"):
		if equalFold(key, "Age") {
			return false
		}
	case len("Alt-Svc"):
		if equalFold(key, "Alt-Svc") {
			return false
		}
	}
	return !hopByHopASCII(key, conn)
}

// UpdatableField reports whether a 304's field may replace the stored
// ones (RFC 9111 §3.2): a field that may be stored, except those
// describing the stored body's bytes, which the 304 did not send ("header
// fields that the cache's stored response depends upon"):
// Content-Encoding, Content-Range, Content-MD5 (Content-Length is never
// stored).
func UpdatableField(name, conn []byte) bool {
	if !StoredField(name, conn) {
		return false
	}
	for _, f := range [...]string{"Content-Encoding", "Content-Range", "Content-MD5"} {
		if equalFold(name, f) {
			return false
		}
	}
	return true
}

// notModifiedFields are the fields a 304 carries from the response it
// stands for (RFC 9110 §15.4.5).
var notModifiedFields = [...]string{"Cache-Control", "Content-Location", "Date", "ETag", "Expires", "Vary"}

// NotModifiedField reports whether a 304 carries the field name from the
// response it stands for (RFC 9110 §15.4.5): Cache-Control,
// Content-Location, Date, ETag, Expires, Vary.
func NotModifiedField(name []byte) bool {
	for _, f := range notModifiedFields {
		if equalFold(name, f) {
			return true
		}
	}
	return false
}

package s3

// Object keys and request paths.
//
// A client's path is the object key: its percent-escapes are decoded
// byte by byte ("%2B" is '+', a literal '+' stays '+', as in a path; a
// '%' not followed by two hex digits stays a literal '%'), and the
// leading '/' is dropped. Nothing else is touched: repeated slashes,
// "." and ".." segments and trailing slashes are part of S3 keys. The
// path sent to the bucket is the key escaped the way SigV4 canonicalises
// an S3 path (each byte outside A-Z a-z 0-9 - _ . ~ / as %XX, upper-case
// hex, and no second escaping), so the bytes on the wire and the
// canonical URI are the same bytes.

const upperHex = "0123456789ABCDEF"

// AppendKey appends to dst the object key that the raw (still escaped)
// request path names.
func AppendKey(dst, rawPath []byte) []byte {
	if len(rawPath) > 0 && rawPath[0] == '/' {
		rawPath = rawPath[1:]
	}
	for i := 0; i < len(rawPath); i++ {
		c := rawPath[i]
		if c == '%' && i+2 < len(rawPath) && isHex(rawPath[i+1]) && isHex(rawPath[i+2]) {
			c = unhex(rawPath[i+1])<<4 | unhex(rawPath[i+2])
			i += 2
		}
		dst = append(dst, c)
	}
	return dst
}

// AppendEscaped appends key escaped as SigV4 canonicalises an S3 path
// (AWS's UriEncode with '/' kept).
func AppendEscaped(dst, key []byte) []byte {
	for _, c := range key {
		dst = appendEscapedByte(dst, c)
	}
	return dst
}

func appendEscapedByte(dst []byte, c byte) []byte {
	if unreserved(c) || c == '/' {
		return append(dst, c)
	}
	return append(dst, '%', upperHex[c>>4], upperHex[c&15])
}

// AppendPath appends the request path (and canonical URI) for key: with
// bucket non-empty (path-style addressing) "/bucket/key", else "/key".
func AppendPath(dst []byte, bucket string, key []byte) []byte {
	dst = append(dst, '/')
	if bucket != "" {
		for i := 0; i < len(bucket); i++ {
			dst = appendEscapedByte(dst, bucket[i])
		}
		dst = append(dst, '/')
	}
	return AppendEscaped(dst, key)
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

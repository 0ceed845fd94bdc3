package byterange

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
func AppendPartHeader(dst []byte, first bool, boundary, contentType []byte, r Range, size int64) []byte {
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
func MultipartLength(ranges []Range, boundary, contentType []byte, size int64) int64 {
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

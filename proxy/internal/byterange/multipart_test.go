package byterange

import "testing"

func TestMultipart(t *testing.T) {
	content := []byte("0123456789abcdefghij")
	size := int64(len(content))
	ranges := []Range{{0, 2}, {10, 19}}
	boundary, ct := []byte("THIS_STRING_SEPARATES"), []byte("text/plain")
	var body []byte
	for i, r := range ranges {
		body = AppendPartHeader(body, i == 0, boundary, ct, r, size)
		body = append(body, content[r.Start:r.End+1]...)
	}
	body = AppendPartsEnd(body, boundary)
	want := "--THIS_STRING_SEPARATES\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-2/20\r\n\r\n012" +
		"\r\n--THIS_STRING_SEPARATES\r\nContent-Type: text/plain\r\nContent-Range: bytes 10-19/20\r\n\r\nabcdefghij" +
		"\r\n--THIS_STRING_SEPARATES--\r\n"
	if string(body) != want {
		t.Errorf("RFC 9110 §14.6 body\n got %q\nwant %q", body, want)
	}
	if n := MultipartLength(ranges, boundary, ct, size); n != int64(len(body)) {
		t.Errorf("MultipartLength = %d, body is %d", n, len(body))
	}
	if n, m := MultipartLength(ranges, boundary, nil, size), int64(len(want)-2*len("Content-Type: text/plain\r\n")); n != m {
		t.Errorf("MultipartLength without type = %d, want %d", n, m)
	}
}

package byterange

import "testing"

func BenchmarkParse(b *testing.B) {
	v := []byte("bytes=1048576-2097151, 0-1023, -4096")
	dst := make([]Range, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = Parse(dst[:0], v, 4<<30)
	}
}

package proxy

import (
	"strconv"
	"testing"
)

// BenchmarkMissS3 is a miss of a 1 KiB object, each iteration a new key:
// the in-memory client, the proxy's miss path and fill, and the
// in-process net/http origin, all counted in cpu-ns/op (the whole
// process's CPU per miss, so an upper bound of the proxy's share). "s3"
// is the same through an S3 origin (path rewrite, signing, header
// filtering); compare its cpu-ns/op with s3's BenchmarkSign for the
// share of a miss that signing costs.
func BenchmarkMissS3(b *testing.B) {
	for _, c := range []struct {
		name string
		mod  func(*Options)
	}{
		{"plain", nil},
		{"s3", func(o *Options) {
			o.Origins[0].S3 = &S3Options{Bucket: "media", Region: "eu-west-1", AccessKeyID: "AK", SecretAccessKey: "SK"}
			o.Origins[0].HostHeader = HostOrigin
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := newPair(&testing.T{}, benchOrigin, c.mod)
			defer p.close()
			path := make([]byte, 0, 64)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; b.Loop(); i++ {
				path = strconv.AppendInt(append(path[:0], "/videos/segment "...), int64(i), 10)
				if r := p.get(string(path)); r.StatusCode() != 200 {
					b.Fatalf("%s: %d", path, r.StatusCode())
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

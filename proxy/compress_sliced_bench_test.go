package proxy

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/proxy/internal/httpcache"
)

// slicedOrigin answers with body as an uncompressed text page.
func slicedOrigin(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("ETag", `"5d8c72a5edda8d6a"`)
		_, _ = w.Write(body)
	}
}

// BenchmarkHitCompressedSliced is BenchmarkHitCompressed for a 4 MiB
// text stored in 1 MiB slices: identity (4 slices), gzip and br (3 each
// for this text) are each served from slices of their own.
func BenchmarkHitCompressedSliced(b *testing.B) {
	body := wordText(4<<20, 21)
	benchHitCodings(b, slicedOrigin(body), 1<<20, int64(len(body)))
}

// BenchmarkCompressSliced is the compression of a stored sliced body (the
// background job: read back, gzip-6 and br-6, slices and records
// written) per identity byte, for benchTexts.
func BenchmarkCompressSliced(b *testing.B) {
	for _, c := range benchTexts(b) {
		b.Run(c.name, func(b *testing.B) {
			// Compression off: the fill stores the identity record, which
			// the loop then compresses again and again.
			p := newPair(&testing.T{}, slicedOrigin(c.b), func(o *Options) {
				o.SliceSize = 1 << 20
				o.Compress.Disable = true
			})
			defer p.close()
			p.get("/c")
			p.settle()
			j := storedJob(b, p)
			if j.obj.slices() < 2 {
				b.Fatalf("record of %d slices", j.obj.slices())
			}
			b.SetBytes(int64(len(c.b)))
			b.ResetTimer()
			var cpu time.Duration
			for range b.N {
				cpu0 := processCPU()
				p.srv.storeCompressedSliced(j)
				cpu += processCPU() - cpu0
				b.StopTimer()
				p.store.mu.Lock() // drop the representations: the store would grow by each
				for k := range p.store.m {
					if strings.Contains(k, "\x00v") {
						delete(p.store.m, k)
					}
				}
				p.store.mu.Unlock()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu)/float64(b.N)/(float64(len(c.b))/(1<<20)), "cpu-ns/MiB")
		})
	}
}

// benchTexts are the bodies the compression benchmarks compress: HTML-like
// text (compressText, which compresses about 30:1), pseudo-random words
// (wordText, about 1.7:1, a hard case for br's matcher), and the files
// named in STRATA_BENCH_TEXT (comma-separated paths: real pages, scripts,
// JSON), each up to 4 MiB.
func benchTexts(b *testing.B) []namedText {
	out := []namedText{{"html", compressText(4 << 20)}, {"words", wordText(4<<20, 22)}}
	for _, path := range strings.Split(os.Getenv("STRATA_BENCH_TEXT"), ",") {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, namedText{filepath.Base(path), data[:min(len(data), 4<<20)]})
	}
	return out
}

type namedText struct {
	name string
	b    []byte
}

// BenchmarkCompressCoding is one coding's writer alone over the same
// bodies, written a slice (1 MiB) at a time.
func BenchmarkCompressCoding(b *testing.B) {
	var c compressor
	o := CompressOptions{}
	o.EnsureDefaults()
	if err := c.init(&o, nil); err != nil {
		b.Fatal(err)
	}
	for _, body := range benchTexts(b) {
		for _, coding := range [][]byte{httpcache.AcceptGzip, httpcache.AcceptBr} {
			b.Run(body.name+"/"+string(coding), func(b *testing.B) {
				var out bytes.Buffer
				b.SetBytes(int64(len(body.b)))
				for range b.N {
					out.Reset()
					w := c.writer(coding, &out)
					for p := body.b; len(p) > 0; p = p[min(len(p), 1<<20):] {
						_, _ = w.Write(p[:min(len(p), 1<<20)])
					}
					_ = w.Close()
					c.put(w)
				}
				b.ReportMetric(float64(out.Len())/float64(len(body.b)), "ratio")
			})
		}
	}
}

package httpcache

import (
	"testing"
)

// Benchmarks of the per-request policy paths. Run briefly:
//
//	go test ./proxy -run '^$' -bench . -benchtime 200ms -count 1
func BenchmarkParseCacheControl(b *testing.B) {
	v := []byte(`public, max-age=3600, s-maxage=60, stale-while-revalidate=30, no-transform`)
	var cc CacheControl
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		parseCacheControl(&cc, v)
	}
}

func BenchmarkParseRequest(b *testing.B) {
	req := testRequest(b, "GET", "/a?b=1", "Cache-Control: max-age=0", "Accept-Encoding: gzip, br", "User-Agent: bench")
	var rp RequestPolicy
	b.ReportAllocs()
	for b.Loop() {
		ParseRequest(&rp, &req.Header)
	}
}

func BenchmarkStoreDecision(b *testing.B) {
	req := testRequest(b, "GET", "/")
	var rp RequestPolicy
	ParseRequest(&rp, &req.Header)
	h := testResponse(b, "200 OK", "Date: "+testDate(0), "Cache-Control: public, max-age=60", "Last-Modified: "+testDate(-60),
		`ETag: "abc"`, "Vary: Accept-Encoding", "Content-Type: text/html")
	o := defaultPolicyOptions()
	var si StoreInfo
	b.ReportAllocs()
	for b.Loop() {
		StoreDecision(&si, &rp, 200, h, testNow, &o)
	}
}

func BenchmarkBuildKey(b *testing.B) {
	req := testRequest(b, "GET", "/path/to/some/object.jpg?w=640&h=480&utm_source=x", "Host: cdn.Example.com:443")
	scheme := []byte("https")
	for _, c := range []struct {
		name string
		o    KeyOptions
	}{{"plain", KeyOptions{}}, {"sorted", KeyOptions{SortQuery: true, IgnoreParams: []string{"utm_source"}}}} {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				dst = BuildKey(dst[:0], scheme, req, &c.o)
			}
		})
	}
}

func BenchmarkVaryKey(b *testing.B) {
	req := testRequest(b, "GET", "/", "Accept-Encoding: gzip, deflate, br, zstd", "Accept-Language: en-US,en;q=0.9")
	vary := []byte("Accept-Encoding, Accept-Language")
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = VaryKey(dst[:0], vary, &req.Header)
	}
}

// storedNames are the field names of a typical origin response.
var storedNames = [][]byte{
	[]byte("Content-Type"), []byte("Server"), []byte("Date"), []byte("Cache-Control"),
	[]byte("Etag"), []byte("Last-Modified"), []byte("Accept-Ranges"), []byte("X-Request-Id"),
}

// BenchmarkStoredField: StoredField over the names of a typical origin
// response (a miss asks once per field).
func BenchmarkStoredField(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range storedNames {
			if !StoredField(k, nil) {
				b.Fatal(string(k))
			}
		}
	}
}

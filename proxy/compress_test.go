package proxy

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// compressText is a compressible body of n bytes.
func compressText(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString("<li class=\"item\">entry " + strings.Repeat("ab", i%7) + "</li>\n")
	}
	return b.Bytes()[:n]
}

// edgeOrigin answers every request with body and the headers kv.
func edgeOrigin(body []byte, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		_, _ = w.Write(body)
	}
}

func decode(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch coding {
	case "gzip":
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = z
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "":
		return b
	default:
		t.Fatalf("Content-Encoding %q", coding)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", coding, err)
	}
	return out
}

// TestCompressAtEdge: one origin fetch of an uncompressed text response
// serves gzip, br and identity clients from stored representations, each
// with its own Content-Encoding, ETag and length; ranges, conditionals and
// If-Range stay within the representation.
func TestCompressAtEdge(t *testing.T) {
	body := compressText(8 << 10)
	p := newPair(t, edgeOrigin(body, "Content-Type", "text/html; charset=utf-8", "ETag", `"v1"`), nil)
	r := p.get("/c", "Accept-Encoding", "gzip, deflate, br")
	if !bytes.Equal(r.Body(), body) || len(r.Header.Peek("Content-Encoding")) != 0 {
		t.Fatalf("miss: CE %q, %d bytes", r.Header.Peek("Content-Encoding"), len(r.Body()))
	}
	expectHeader(t, r, "Vary", "") // the fill's clients get the response as it came
	p.settle()
	stored := map[string][]byte{}
	for _, c := range []struct{ ae, ce, etag string }{
		{"gzip, deflate, br", "br", `W/"v1-br"`},
		{"gzip", "gzip", `W/"v1-gz"`},
		{"identity", "", `"v1"`},
		{"", "", `"v1"`},
	} {
		r := p.get("/c", "Accept-Encoding", c.ae)
		expectEdgeHit(t, r, c.ae, c.ce, c.etag, body)
		if c.ce != "" && len(r.Body()) >= len(body)/2 {
			t.Errorf("%s: %d bytes for %d: poor compression", c.ce, len(r.Body()), len(body))
		}
		stored[c.ce] = append([]byte(nil), r.Body()...)
	}
	if n := p.hits.Load(); n != 1 {
		t.Fatalf("origin saw %d requests, want 1", n)
	}
	// A range of the gzip representation is a range of its bytes.
	r = p.get("/c", "Accept-Encoding", "gzip", "Range", "bytes=10-19")
	gz := stored["gzip"]
	if r.StatusCode() != 206 || !bytes.Equal(r.Body(), gz[10:20]) {
		t.Fatalf("range: %d %q, want 206 of the gzip bytes", r.StatusCode(), r.Body())
	}
	expectHeader(t, r, "Content-Range", "bytes 10-19/"+itoa(len(gz)))
	expectHeader(t, r, "Content-Encoding", "gzip")
	// Identity range: identity bytes.
	r = p.get("/c", "Accept-Encoding", "identity", "Range", "bytes=0-4")
	if r.StatusCode() != 206 || !bytes.Equal(r.Body(), body[:5]) {
		t.Fatalf("identity range: %d %q", r.StatusCode(), r.Body())
	}
	// Conditionals: each representation's own tag.
	r = p.get("/c", "Accept-Encoding", "gzip", "If-None-Match", `W/"v1-gz"`)
	if r.StatusCode() != 304 {
		t.Fatalf("If-None-Match of the gzip tag: %d", r.StatusCode())
	}
	r = p.get("/c", "Accept-Encoding", "br", "If-None-Match", `"v1"`)
	if r.StatusCode() != 200 {
		t.Fatalf("If-None-Match of the identity tag on br: %d, want 200", r.StatusCode())
	}
	// If-Range with the weak tag never matches: the whole representation.
	r = p.get("/c", "Accept-Encoding", "gzip", "Range", "bytes=0-9", "If-Range", `W/"v1-gz"`)
	if r.StatusCode() != 200 || !bytes.Equal(r.Body(), gz) {
		t.Fatalf("If-Range weak: %d, %d bytes", r.StatusCode(), len(r.Body()))
	}
	if n := p.hits.Load(); n != 1 {
		t.Fatalf("origin saw %d requests, want 1", n)
	}
	// Compressed once per object and coding, however many hits.
	for i := range p.srv.cz.objects {
		if n := testutil.ToFloat64(p.srv.cz.objects[i]); n != 1 {
			t.Errorf("%s compressed %v times for 9 hits, want once", edgeCodings[i+1].name, n)
		}
	}
}

func itoa(n int) string { return string(fasthttp.AppendUint(nil, n)) }

// TestCompressNotApplied: what must be stored as it came.
func TestCompressNotApplied(t *testing.T) {
	text := compressText(8 << 10)
	noise := make([]byte, 8<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	tests := []struct {
		name string
		body []byte
		kv   []string
		mod  func(*Options)
		vary string // the Vary a client sees
		ce   string // Content-Encoding a gzip client gets
	}{
		{"already compressed", text, []string{"Content-Type", "text/html", "Content-Encoding", "gzip"}, nil, "", "gzip"},
		{"the origin varies", text, []string{"Content-Type", "text/html", "Vary", "Accept-Encoding"}, nil, "Accept-Encoding", ""},
		{"no-transform", text, []string{"Content-Type", "text/html", "Cache-Control", "max-age=60, no-transform"}, nil, "", ""},
		{"not a compressible type", text, []string{"Content-Type", "image/png"}, nil, "", ""},
		{"too small", text[:500], []string{"Content-Type", "text/css"}, nil, "", ""},
		{"turned off", text, []string{"Content-Type", "text/html"}, func(o *Options) { o.Compress.Disable = true }, "", ""},
		{"larger than max_size", compressText(100 << 10), []string{"Content-Type", "text/html"},
			func(o *Options) { o.Compress.MaxSize = 100<<10 - 1 }, "", ""},
		{"does not pay: identity bytes", noise, []string{"Content-Type", "text/plain"}, nil, "Accept-Encoding", ""},
		{"other types by config", text, []string{"Content-Type", "application/x-custom"},
			func(o *Options) { o.Compress.Types = []string{"application/x-custom"} }, "Accept-Encoding", "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, edgeOrigin(tt.body, tt.kv...), tt.mod)
			for i := range 2 {
				r := p.get("/n", "Accept-Encoding", "gzip")
				p.settle()
				if i == 0 {
					continue
				}
				expectHeader(t, r, "Vary", tt.vary)
				expectHeader(t, r, "Content-Encoding", tt.ce)
				want := tt.body
				if tt.ce == "gzip" && tt.vary != "" {
					want = decode(t, "gzip", r.Body())
					if !bytes.Equal(want, tt.body) {
						t.Fatal("gzip body does not decode to the origin's")
					}
				} else if !bytes.Equal(r.Body(), want) {
					t.Fatalf("body differs from the origin's (%d bytes)", len(r.Body()))
				}
			}
			if n := p.hits.Load(); n != 1 {
				t.Errorf("origin saw %d requests, want 1", n)
			}
		})
	}
}

func TestCompressOptions(t *testing.T) {
	for _, tt := range []struct {
		o  CompressOptions
		ok bool
	}{
		{CompressOptions{}, true},
		{CompressOptions{Types: []string{"text/*", "application/json"}}, true},
		{CompressOptions{Types: []string{"text"}}, false},
		{CompressOptions{Types: []string{"text/html; q=1"}}, false},
		{CompressOptions{MinSize: -1}, false},
		{CompressOptions{MaxSize: -1}, false},
		{CompressOptions{MaxSize: 2 << 30}, false},
		{CompressOptions{GzipLevel: 10}, false},
		{CompressOptions{BrotliQuality: 12}, false},
	} {
		o := Options{Origins: []OriginOptions{{URL: "http://127.0.0.1:1"}}, Compress: tt.o}
		o.EnsureDefaults()
		if err := o.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: %v", tt.o, err)
		}
	}
}

func TestCompressType(t *testing.T) {
	for ct, want := range map[string]bool{"text/html": true, "TEXT/CSS; charset=utf-8": true, "application/json": true,
		"application/jsonx": false, "text": false, "textual/x": false, "image/svg+xml": true, "image/png": false, "": false} {
		if got := compressType(DefaultCompressTypes, []byte(ct)); got != want {
			t.Errorf("%q: %v, want %v", ct, got, want)
		}
	}
	for tag, want := range map[string]string{`"a"`: `W/"a-gz"`, `W/"a"`: `W/"a-gz"`, `a`: "", `""`: `W/"-gz"`, `"a"b"`: ""} {
		if got := string(weakTagWith([]byte(tag), "-gz")); got != want {
			t.Errorf("tag %q: %q, want %q", tag, got, want)
		}
	}
}

// TestCompressRevalidateAndPurge: a stale compressed representation is
// revalidated with its own tag, which the origin does not know: the origin
// answers 200 and the new body is compressed again (never a 304 that would
// pair the origin's tag with compressed bytes); a URL purge removes every
// representation.
func TestCompressRevalidateAndPurge(t *testing.T) {
	v1, v2 := compressText(6<<10), append(compressText(6<<10), "v2"...)
	var inm []string
	body := v1
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		inm = append(inm, r.Header.Get("If-None-Match"))
		w.Header().Set("Cache-Control", "max-age=10")
		w.Header().Set("Content-Type", "application/json")
		tag := `"v1"`
		if len(body) != len(v1) {
			tag = `"v2"`
		}
		w.Header().Set("ETag", tag)
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(body)
	}, func(o *Options) { o.PurgeToken = "t" })
	p.gets("/rv", "Accept-Encoding", "gzip")
	r := p.gets("/rv", "Accept-Encoding", "gzip")
	if !bytes.Equal(decode(t, string(r.Header.Peek("Content-Encoding")), r.Body()), v1) {
		t.Fatal("gzip hit does not decode to v1")
	}
	body = v2
	p.clock.Advance(20 * time.Second)
	r = p.gets("/rv", "Accept-Encoding", "gzip")
	if got := decode(t, string(r.Header.Peek("Content-Encoding")), r.Body()); !bytes.Equal(got, v2) {
		t.Fatalf("after revalidation: %d bytes, want v2", len(got))
	}
	if inm[len(inm)-1] != `W/"v1-gz"` {
		t.Errorf("revalidation sent If-None-Match %q, want the representation's own tag", inm[len(inm)-1])
	}
	for _, ae := range []string{"gzip", "br", "identity"} {
		r = p.gets("/rv", "Accept-Encoding", ae)
		if got := decode(t, string(r.Header.Peek("Content-Encoding")), r.Body()); !bytes.Equal(got, v2) {
			t.Fatalf("%s after refetch: not v2", ae)
		}
	}
	fetches := p.hits.Load()
	a := NewAdmin(p.srv, p.reg)
	if code, body := adminDo(a, "POST", "/purge?url=http://example.com/rv", "Bearer t"); code != 200 {
		t.Fatalf("purge: %d %s", code, body)
	}
	r = p.gets("/rv", "Accept-Encoding", "br")
	if !strings.Contains(string(r.Header.Peek("Cache-Status")), "fwd=") {
		t.Fatalf("br after purge: %s", r.Header.Peek("Cache-Status"))
	}
	if p.hits.Load() != fetches+1 {
		t.Errorf("after purge: %d origin requests, want 1", p.hits.Load()-fetches)
	}
}

// TestCompressSkippedWhenBusy: with every compression slot taken, a body
// is stored as it came and counted, and served uncompressed.
func TestCompressSkippedWhenBusy(t *testing.T) {
	p := newPair(t, edgeOrigin(compressText(4<<10), "Content-Type", "text/css"), nil)
	for range cap(p.srv.cz.slots) {
		p.srv.cz.slots <- struct{}{}
	}
	p.get("/busy", "Accept-Encoding", "gzip")
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	for range cap(p.srv.cz.slots) {
		<-p.srv.cz.slots
	}
	if n := testutil.ToFloat64(p.srv.cz.skipped); n != 1 {
		t.Fatalf("skipped %v, want 1", n)
	}
	r := p.gets("/busy", "Accept-Encoding", "gzip")
	expectHeader(t, r, "Content-Encoding", "")
	expectHeader(t, r, "Vary", "")
	if n := p.hits.Load(); n != 1 {
		t.Errorf("origin saw %d requests, want 1", n)
	}
}

// TestCompressedHeadersDropDigests: a compressed representation carries
// no digest of the identity bytes (Content-MD5, Digest, Content-Digest,
// Repr-Digest): a client checking one would reject the compressed body.
func TestCompressedHeadersDropDigests(t *testing.T) {
	var id []headerKV
	for _, k := range []string{"Content-Type", "Content-Md5", "Digest", "Content-Digest", "Repr-Digest", "Etag"} {
		id = append(id, headerKV{Key: []byte(k), Value: []byte(`"x"`)})
	}
	out, etag := compressedHeaders(id, []byte("gzip"), "-gz")
	var names []string
	for _, kv := range out {
		names = append(names, string(kv.Key))
	}
	if got := strings.Join(names, " "); got != "Content-Type Content-Encoding Etag" || string(etag) != `W/"x-gz"` {
		t.Fatalf("fields %q, ETag %s", got, etag)
	}
}

// TestCompressNotUnderVariantKey: a 200 stored under a variant's key (a
// Range request for a dropped variant, answered whole by an origin that
// ignores Range) is not compressed into an index of its own there: an
// index under a variant's key reads as a damaged record, a miss and one
// more origin fetch.
func TestCompressNotUnderVariantKey(t *testing.T) {
	body := compressText(8 << 10)
	p := newPair(t, edgeOrigin(body, "Content-Type", "text/html", "ETag", `"v1"`), nil)
	p.get("/c", "Accept-Encoding", "gzip")
	p.settle()
	p.store.mu.Lock()
	for k := range p.store.m {
		if strings.HasSuffix(k, "=4:gzip;") {
			delete(p.store.m, k) // the gzip representation's record, as evicted
		}
	}
	p.store.mu.Unlock()
	p.get("/c", "Accept-Encoding", "gzip", "Range", "bytes=0-9") // 206 or 200, as the fill allows
	p.settle()
	fetches := p.hits.Load()
	var r *fasthttp.Response
	for range 2 {
		r = p.get("/c", "Accept-Encoding", "gzip")
		if got := decode(t, string(r.Header.Peek("Content-Encoding")), r.Body()); !bytes.Equal(got, body) {
			t.Fatal("gzip client: body differs")
		}
		p.settle()
	}
	if n := testutil.ToFloat64(p.srv.m.corrupt); n != 0 || p.hits.Load() != fetches {
		t.Errorf("%v records read as damaged, %d more origin fetches; want none", n, p.hits.Load()-fetches)
	}
}

// TestEdgeIndexLosesToPurge: a purge that comes while compression at the
// edge publishes its variant index (between the index's generation check
// and its write) wins: afterwards the URL's key holds nothing, and no
// variant is left behind. The purge is started from inside the check's
// Get and given 100 ms to finish first, as it does without the lock.
func TestEdgeIndexLosesToPurge(t *testing.T) {
	p := newPair(t, edgeOrigin(wordText(8<<10, 3), "Content-Type", "text/plain"),
		func(o *Options) { o.Compress.Disable = true })
	p.get("/p")
	p.settle()
	j := storedJob(t, p)
	mkey := metaKey(nil, j.pkey)
	purged := make(chan struct{})
	var started atomic.Bool
	p.store.AfterGet = func(key []byte) {
		if !bytes.Equal(key, mkey) || !started.CompareAndSwap(false, true) {
			return
		}
		go func() {
			p.srv.removeObject(j.pkey)
			close(purged)
		}()
		select {
		case <-purged:
		case <-time.After(100 * time.Millisecond):
		}
	}
	p.srv.storeCompressed(j)
	<-purged
	if _, _, ok := p.store.Get(mkey, nil); ok {
		t.Error("the purged URL is stored again, under compression's variant index")
	}
	if n := variantEntries(p); n != 0 {
		t.Errorf("%d entries left under variant keys", n)
	}
}

// TestCompressJobOwnsItsCopy: compression at the edge does not keep the
// fill from being recycled: the job takes its own copy of the object and
// the primary key, so the fill's buffers may be overwritten (as recycling
// does) as soon as compressLater returns, and the variants and index
// still come out right.
func TestCompressJobOwnsItsCopy(t *testing.T) {
	body := wordText(8<<10, 5)
	p := newPair(t, edgeOrigin(body, "Content-Type", "text/plain", "ETag", `"c"`),
		func(o *Options) { o.Compress.Disable = true })
	p.get("/c")
	p.settle()
	j := storedJob(t, p)
	f := acquireFill(p.srv, j.pkey)
	f.obj, f.rv.pkey = j.obj, append(f.rv.pkey[:0], j.pkey...)
	p.srv.compressLater(f)
	if f.noPool {
		t.Error("compressLater kept its fill from being recycled")
	}
	for _, b := range [][]byte{f.rv.pkey, f.obj.Body, f.obj.HeaderBlock, f.obj.ETag} {
		for i := range b {
			b[i] = 'X'
		}
	}
	for _, kv := range f.obj.Headers {
		for i := range kv.Value {
			kv.Value[i] = 'X'
		}
	}
	p.settle()
	for _, coding := range []string{"identity", "gzip", "br"} {
		o, ok := edgeRecord(p, coding)
		if !ok {
			t.Fatalf("no %s representation stored", coding)
		}
		var ct []byte
		for _, kv := range o.Headers {
			if strings.EqualFold(string(kv.Key), "Content-Type") {
				ct = kv.Value
			}
		}
		if string(ct) != "text/plain" {
			t.Errorf("%s: Content-Type %q, want text/plain", coding, ct)
		}
	}
	if v, _, ok := p.store.Get(metaKey(nil, j.pkey), nil); !ok || !isVariantIndex(v) {
		t.Error("no variant index under the URL's key")
	}
	r := p.get("/c")
	defer fasthttp.ReleaseResponse(r)
	if !bytes.Equal(r.Body(), body) {
		t.Error("the identity body served after compression differs from the origin's")
	}
}

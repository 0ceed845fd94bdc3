package proxy

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// varyOrigin answers with a body naming the request's Accept-Encoding.
func varyOrigin(vary string) http.HandlerFunc { return varyOriginCC(vary, "max-age=60") }

func varyOriginCC(vary, cc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", cc)
		w.Header().Set("Vary", vary)
		w.Header().Set("ETag", `"e-`+r.Header.Get("Accept-Encoding")+`"`)
		_, _ = w.Write([]byte("enc=" + r.Header.Get("Accept-Encoding") + " lang=" + r.Header.Get("Accept-Language")))
	}
}

// TestVariants: one stored entry per variant, keyed by the normalised
// values of the fields Vary names.
func TestVariants(t *testing.T) {
	p := newPair(t, varyOrigin("Accept-Encoding"), nil)
	steps := []struct {
		ae     string // "-": absent
		cs     string
		body   string
		origin int64
	}{
		{"gzip", "strata; fwd=uri-miss; stored", "enc=gzip lang=", 1},
		{"br", "strata; fwd=uri-miss; stored", "enc=br lang=", 2},
		{"gzip", "strata; hit; detail=memory", "enc=gzip lang=", 2},
		{"br", "strata; hit; detail=memory", "enc=br lang=", 2},
		{"GZIP", "strata; hit; detail=memory", "enc=gzip lang=", 2}, // normalised (encoding.go)
		{"gzip, br", "strata; hit; detail=memory", "enc=br lang=", 2},
		{"br;q=0.5,gzip", "strata; hit; detail=memory", "enc=gzip lang=", 2},
		{"-", "strata; fwd=uri-miss; stored", "enc=identity lang=", 3},
		{"-", "strata; hit; detail=memory", "enc=identity lang=", 3},
		{"", "strata; hit; detail=memory", "enc=identity lang=", 3}, // empty, absent and identity are one
		{"deflate", "strata; hit; detail=memory", "enc=identity lang=", 3},
	}
	for i, s := range steps {
		var kv []string
		if s.ae != "-" {
			kv = []string{"Accept-Encoding", s.ae}
		}
		r := p.gets("/v", kv...)
		if got := string(r.Header.Peek("Cache-Status")); got != s.cs {
			t.Fatalf("step %d (%q): Cache-Status %q, want %q", i, s.ae, got, s.cs)
		}
		if string(r.Body()) != s.body {
			t.Fatalf("step %d (%q): body %q, want %q", i, s.ae, r.Body(), s.body)
		}
		if n := p.hits.Load(); n != s.origin {
			t.Fatalf("step %d: origin saw %d requests, want %d", i, n, s.origin)
		}
	}
}

// TestVaryChangesAndStar: a response whose Vary changes starts a new
// index (older variants unreachable); Vary: * is never stored.
func TestVaryChangesAndStar(t *testing.T) {
	vary := "Accept-Encoding"
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) { varyOrigin(vary)(w, r) }, nil)
	p.gets("/vc", "Accept-Encoding", "gzip")
	if r := p.gets("/vc", "Accept-Encoding", "gzip"); !strings.HasPrefix(string(r.Header.Peek("Cache-Status")), "strata; hit") {
		t.Fatalf("not a hit: %s", r.Header.Peek("Cache-Status"))
	}
	p.clock.Advance(2 * time.Minute)
	vary = "Accept-Language"
	p.gets("/vc", "Accept-Encoding", "gzip", "Accept-Language", "fr")
	r := p.gets("/vc", "Accept-Encoding", "br", "Accept-Language", "fr")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	vary = "*"
	p.clock.Advance(2 * time.Minute)
	for range 2 {
		r = p.gets("/vc", "Accept-Language", "fr")
		expectHeader(t, r, "Cache-Status", "strata; fwd=stale")
	}
}

// TestVariantBound: beyond MaxVariants the oldest variant is evicted,
// record and slices.
func TestVariantBound(t *testing.T) {
	p := newPair(t, varyOrigin("Accept-Language"), func(o *Options) { o.MaxVariants = 2 })
	seq := []struct {
		ae  string
		hit bool
	}{
		{"a", false}, {"b", false}, {"c", false}, // c evicts a
		{"c", true}, {"b", true}, {"a", false}, // a evicts b
		{"b", false}, {"a", true},
	}
	for i, s := range seq {
		r := p.gets("/vb", "Accept-Language", s.ae)
		hit := strings.HasPrefix(string(r.Header.Peek("Cache-Status")), "strata; hit")
		if hit != s.hit {
			t.Fatalf("step %d (%s): Cache-Status %s", i, s.ae, r.Header.Peek("Cache-Status"))
		}
	}
	// One index record and two variant records remain.
	if n := p.store.Len(); n != 3 {
		t.Fatalf("store holds %d entries, want 3", n)
	}
}

// TestVariantRevalidation: a stale variant is revalidated on its own key
// and refreshed in place.
func TestVariantRevalidation(t *testing.T) {
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"e-gzip"` {
			w.Header().Set("ETag", `"e-gzip"`)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		varyOriginCC("Accept-Encoding", "max-age=10")(w, r)
	}, nil)
	p.gets("/vr", "Accept-Encoding", "gzip")
	p.gets("/vr", "Accept-Encoding", "br")
	p.clock.Advance(20 * time.Second)
	r := p.gets("/vr", "Accept-Encoding", "gzip")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
	if string(r.Body()) != "enc=gzip lang=" {
		t.Fatalf("body %q", r.Body())
	}
	r = p.gets("/vr", "Accept-Encoding", "br")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; stored")
}

// TestVariantCoalescedMismatch: requests for other variants that joined a
// varying fill fetch their own response.
func TestVariantCoalescedMismatch(t *testing.T) {
	g := newGate()
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		g.wait()
		varyOrigin("Accept-Encoding")(w, r)
	}, nil)
	done := make(chan string, 2)
	go func() { done <- string(p.get("/vm", "Accept-Encoding", "gzip").Body()) }()
	waitFor(t, func() bool { return p.waiters("/vm") >= 1 })
	go func() { done <- string(p.get("/vm", "Accept-Encoding", "br").Body()) }()
	waitFor(t, func() bool { return p.waiters("/vm") >= 2 })
	g.open()
	got := []string{<-done, <-done}
	if !(got[0] == "enc=gzip lang=" && got[1] == "enc=br lang=" || got[1] == "enc=gzip lang=" && got[0] == "enc=br lang=") {
		t.Fatalf("bodies %q", got)
	}
}

func TestVariantIndexRoundTrip(t *testing.T) {
	for _, x := range []variantIndex{
		{Epoch: 1, Vary: []byte("Accept-Encoding")},
		{Epoch: 1 << 63, Vary: []byte("a, b"), Keys: [][]byte{[]byte("k1"), nil, bytes.Repeat([]byte("x"), maxVariantKeyLen)}},
	} {
		b := appendVariantIndex([]byte("pre"), &x)[3:]
		if !isVariantIndex(b) || isVariantIndex(appendObject(nil, sampleObject(3))) {
			t.Fatal("isVariantIndex")
		}
		var y variantIndex
		if err := decodeVariantIndex(&y, b); err != nil {
			t.Fatal(err)
		}
		for i := range y.Keys {
			if len(y.Keys[i]) == 0 {
				y.Keys[i] = nil
			}
		}
		if len(x.Keys) == 0 {
			x.Keys = y.Keys[:0:0]
			y.Keys = x.Keys
		}
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("round trip %+v -> %+v", x, y)
		}
		for i := range b { // every flipped byte is caught
			c := append([]byte(nil), b...)
			c[i] ^= 0x40
			if decodeVariantIndex(&y, c) == nil {
				t.Fatalf("flip at %d accepted", i)
			}
		}
	}
}

func FuzzDecodeVariantIndex(f *testing.F) {
	f.Add(appendVariantIndex(nil, &variantIndex{Epoch: 7, Vary: []byte("Accept"), Keys: [][]byte{[]byte("accept=3:a/b;")}}))
	f.Add([]byte("STV\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var x variantIndex
		if decodeVariantIndex(&x, b) != nil {
			return
		}
		if len(x.Keys) > maxVariantsLimit || len(x.Vary) == 0 {
			t.Fatalf("accepted %d keys, vary %q", len(x.Keys), x.Vary)
		}
		again := appendVariantIndex(nil, &x)
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

package httpcache

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestVaryKey(t *testing.T) {
	type hdrs = []string
	tests := []struct {
		name      string
		vary      string
		headers   hdrs
		want      string
		cacheable bool
	}{
		{"§4.1 no names", "", nil, "", true},
		{"§4.1 absent field", "X-Foo", nil, "x-foo;", true},
		{"§4.1 empty field differs from absent", "X-Foo", hdrs{"X-Foo:"}, "x-foo=0:;", true},
		{"§4.1 plain value kept", "X-Foo", hdrs{"X-Foo:  Bar Baz "}, "x-foo=7:Bar Baz;", true},
		{"§4.1 lines of a field joined", "X-Foo", hdrs{"X-Foo: a", "X-Foo: b"}, "x-foo=3:a,b;", true},
		{"§4.1 names case-insensitive, sorted, de-duplicated", "X-B, x-a , X-b", hdrs{"X-A: 1", "X-B: 2"}, "x-a=1:1;x-b=1:2;", true},
		{"§4.1 Vary: *", "*", nil, "", false},
		{"§4.1 Vary: Foo, *", "Foo, *", nil, "", false},
		{"§4.1 Vary: , *", ", *", nil, "", false},
		{"§4.1 name not a token", "X Foo", nil, "", false},
		{"RFC 9110 §12.5.3 Accept-Encoding sorted, lower-cased, de-duplicated", "Accept-Encoding",
			hdrs{"Accept-Encoding: GZIP, br ,gzip, deflate"}, "accept-encoding=15:br,deflate,gzip;", true},
		{"RFC 9110 §12.5.3 q-values kept, whitespace removed", "accept-encoding",
			hdrs{"Accept-Encoding: gzip ; q=0.5, br;Q=1"}, "accept-encoding=17:br;q=1,gzip;q=0.5;", true},
		{"RFC 9110 §12.5.3 Accept-Encoding across lines", "Accept-Encoding",
			hdrs{"Accept-Encoding: gzip", "Accept-Encoding: br"}, "accept-encoding=7:br,gzip;", true},
		{"RFC 9110 §12.5.4 Accept-Language keeps order", "Accept-Language",
			hdrs{"Accept-Language: EN-us, de;q=0.5"}, "accept-language=14:en-us,de;q=0.5;", true},
		{"empty elements dropped", "Accept-Encoding", hdrs{"Accept-Encoding: ,gzip,,"}, "accept-encoding=4:gzip;", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest(t, "GET", "/", tt.headers...)
			got, ok := VaryKey([]byte("k|"), []byte(tt.vary), &req.Header)
			if ok != tt.cacheable || string(got) != "k|"+tt.want {
				t.Errorf("VaryKey(%q) = %q, %v; want %q, %v", tt.vary, got, ok, "k|"+tt.want, tt.cacheable)
			}
		})
	}
}

// Two requests that differ only in what the normalisation removes share a
// variant; any other difference separates them.
func TestVaryKeyEquivalence(t *testing.T) {
	vary := []byte("Accept-Encoding, Accept-Language")
	key := func(h ...string) string {
		req := testRequest(t, "GET", "/", h...)
		k, ok := VaryKey(nil, vary, &req.Header)
		if !ok {
			t.Fatal("not cacheable")
		}
		return string(k)
	}
	same := [][2][]string{
		{{"Accept-Encoding: gzip, br"}, {"Accept-Encoding: br,gzip"}},
		{{"Accept-Encoding: gzip, gzip"}, {"Accept-Encoding: GZIP"}},
		{{"Accept-Language: en"}, {"Accept-Language:   EN  "}},
	}
	for _, p := range same {
		if key(p[0]...) != key(p[1]...) {
			t.Errorf("%v and %v should share a variant", p[0], p[1])
		}
	}
	differ := [][2][]string{
		{{"Accept-Encoding: gzip"}, {"Accept-Encoding: gzip;q=0.5"}},
		{{"Accept-Language: en, de"}, {"Accept-Language: de, en"}},
		{{}, {"Accept-Encoding:"}},
		{{"Accept-Encoding: gzip"}, {"Accept-Language: gzip"}},
	}
	for _, p := range differ {
		if key(p[0]...) == key(p[1]...) {
			t.Errorf("%v and %v must not share a variant", p[0], p[1])
		}
	}
}

func TestVaryKeyBounds(t *testing.T) {
	var names []string
	for i := range maxVaryNames + 1 {
		names = append(names, "X-"+string(rune('a'+i)))
	}
	req := testRequest(t, "GET", "/")
	if _, ok := VaryKey(nil, []byte(strings.Join(names, ",")), &req.Header); ok {
		t.Errorf("%d names accepted, want refusal", len(names))
	}
	if _, ok := VaryKey(nil, []byte(strings.Join(names[:maxVaryNames], ",")), &req.Header); !ok {
		t.Errorf("%d names refused", maxVaryNames)
	}
	// Past maxVaryElems Accept-Encoding elements keep their order.
	var els []string
	for i := maxVaryElems + 1; i > 0; i-- {
		els = append(els, "c"+itoa(int64(i)))
	}
	req = testRequest(t, "GET", "/", "Accept-Encoding: "+strings.Join(els, ", "))
	k, ok := VaryKey(nil, []byte("Accept-Encoding"), &req.Header)
	if want := strings.Join(els, ","); !ok || !strings.Contains(string(k), want) {
		t.Errorf("VaryKey = %q, want the elements in order", k)
	}
}

func TestVaryStarAndAppendVary(t *testing.T) {
	for v, want := range map[string]bool{"*": true, "a, *": true, " * ,b": true, "a": false, "": false, "**": false} {
		if varyStar([]byte(v)) != want {
			t.Errorf("varyStar(%q) != %v", v, want)
		}
	}
	h := testResponse(t, "200 OK", "Vary: Accept", "Vary: Accept-Encoding, X")
	if got := string(AppendVary([]byte("v="), h)); got != "v=Accept, Accept-Encoding, X" {
		t.Errorf("AppendVary = %q", got)
	}
}

func TestVaryKeyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	req := testRequest(t, "GET", "/", "Accept-Encoding: gzip, br, deflate", "Accept-Language: en", "X-Device: phone")
	vary := []byte("Accept-Encoding, Accept-Language, X-Device, X-Absent")
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { dst, _ = VaryKey(dst[:0], vary, &req.Header) }); n != 0 {
		t.Errorf("VaryKey allocates %v times per run, want 0", n)
	}
}

// varyDecode parses a key back into name -> value ("\x00" for absent),
// failing when the documented format does not hold.
func varyDecode(t *testing.T, k string) map[string]string {
	m := map[string]string{}
	for len(k) > 0 {
		i := strings.IndexAny(k, "=;")
		if i <= 0 {
			t.Fatalf("bad key rest %q", k)
		}
		name := k[:i]
		if _, dup := m[name]; dup {
			t.Fatalf("name %q twice in %q", name, k)
		}
		if k[i] == ';' {
			m[name] = "\x00"
			k = k[i+1:]
			continue
		}
		j := strings.IndexByte(k[i:], ':')
		if j < 0 {
			t.Fatalf("no length in %q", k)
		}
		n := 0
		for _, c := range k[i+1 : i+j] {
			n = n*10 + int(c-'0')
		}
		start := i + j + 1
		if start+n >= len(k)+1 || k[start+n] != ';' {
			t.Fatalf("bad length %d in %q", n, k)
		}
		m[name] = k[start : start+n]
		k = k[start+n+1:]
	}
	return m
}

func FuzzVaryKey(f *testing.F) {
	f.Add("Accept-Encoding, X-A", "gzip, br", "x")
	f.Add("*", "", "")
	f.Add("a,b,,A", ",,;", "\t")
	f.Add("Accept-Encoding", "gzip, br", "")
	f.Add(" accept-ENCODING\t", "", "")
	f.Fuzz(func(t *testing.T, vary, ae, xa string) {
		req := new(fasthttp.Request)
		req.Header.Set("Accept-Encoding", ae)
		req.Header.Set("X-A", xa)
		k1, ok1 := VaryKey(nil, []byte(vary), &req.Header)
		// The one-name fast path gives the general path's key.
		if k3, ok3 := varyKeyList(nil, []byte(vary), &req.Header); ok3 != ok1 || string(k3) != string(k1) {
			t.Fatalf("Vary %q: VaryKey %q %v, the list's %q %v", vary, k1, ok1, k3, ok3)
		}
		k2, ok2 := VaryKey([]byte("p"), []byte(vary), &req.Header)
		if ok1 != ok2 || "p"+string(k1) != string(k2) {
			t.Fatalf("not deterministic: %q %v / %q %v", k1, ok1, k2, ok2)
		}
		if !ok1 {
			if len(k1) != 0 {
				t.Fatalf("refused but wrote %q", k1)
			}
			return
		}
		if varyStar([]byte(vary)) {
			t.Fatalf("Vary %q lists * but was accepted", vary)
		}
		m := varyDecode(t, string(k1))
		for name := range m {
			if strings.ToLower(name) != name {
				t.Fatalf("name %q not lower-cased", name)
			}
		}
		if v, ok := m["x-a"]; ok && v != "\x00" && v != strings.Trim(string(req.Header.Peek("X-A")), " \t") {
			t.Fatalf("x-a value %q, header %q", v, req.Header.Peek("X-A"))
		}
	})
}

// BenchmarkVaryKeyAE: the key under "Vary: Accept-Encoding" (the Vary
// of every compressed object) by VaryKey's fast path and by the list
// path it skips.
func BenchmarkVaryKeyAE(b *testing.B) {
	req := new(fasthttp.Request)
	req.Header.Set("Accept-Encoding", "gzip")
	v, dst := []byte("Accept-Encoding"), make([]byte, 0, 64)
	for _, c := range []struct {
		name string
		key  func([]byte, []byte, *fasthttp.RequestHeader) ([]byte, bool)
	}{{"fast", VaryKey}, {"list", varyKeyList}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = c.key(dst[:0], v, &req.Header)
			}
		})
	}
}

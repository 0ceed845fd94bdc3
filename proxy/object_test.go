package proxy

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleObject(bodyLen int) *object {
	o := &object{
		Status: 200, Gen: 0x1122334455667788, SliceSize: 16, BodyLen: int64(bodyLen),
		RequestTime:  time.Unix(0, 1_700_000_000_000_000_001),
		ResponseTime: time.Unix(0, 1_700_000_000_500_000_000),
		Date:         time.Unix(1_700_000_000, 0), LastModified: time.Unix(1_600_000_000, 0),
		AgeHeader: 3, Lifetime: time.Minute, StaleIfError: time.Second, MustRevalidate: true, NoCache: true,
		ETag: []byte(`"abc"`), Vary: []byte("Accept-Encoding"),
		Headers: []headerKV{{[]byte("Content-Type"), []byte("text/plain")}, {[]byte("X-Empty"), nil}},
	}
	if o.inline() {
		o.Body = bigBody(bodyLen)
		if bodyLen == 0 {
			o.Body = nil
		}
	}
	return o
}

// digestObject is a sliced object without a validator that lists its
// slices' digests.
func digestObject(bodyLen int) *object {
	o := sampleObject(bodyLen)
	o.ETag, o.LastModified = nil, time.Time{}
	for i := range o.slices() {
		o.Digests = binary.BigEndian.AppendUint64(o.Digests, uint64(i+1)*0x0101010101010101)
	}
	return o
}

func TestObjectRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 16, 17, 1000, -17, -1000} {
		var in *object
		if n < 0 { // with slice digests
			n = -n
			in = digestObject(n)
		} else {
			in = sampleObject(n)
		}
		b := appendObject([]byte("prefix"), in)[len("prefix"):]
		var out object
		if err := decodeObject(&out, b); err != nil {
			t.Fatalf("len %d: %v", n, err)
		}
		if want := "Content-Type: text/plain\r\nX-Empty: \r\n"; string(out.HeaderBlock) != want {
			t.Fatalf("len %d: header block %q, want %q", n, out.HeaderBlock, want)
		}
		in.HeaderBlock = out.HeaderBlock
		if !reflect.DeepEqual(in, &out) {
			t.Fatalf("len %d: round trip\n in %+v\nout %+v", n, in, &out)
		}
		if want := (n + 15) / 16; n > 16 && out.slices() != want {
			t.Fatalf("slices %d, want %d", out.slices(), want)
		}
		// Every single-byte corruption of the metadata or the checksum and
		// every truncation is refused; the inline body is not checksummed
		// (the store checks it), so a flip there decodes, into the body.
		bodyAt := len(b) - 4 - len(in.Body)
		for i := range b {
			c := append([]byte(nil), b...)
			c[i] ^= 0x40
			err := decodeObject(&out, c)
			if inBody := i >= bodyAt && i < len(b)-4; inBody {
				if err != nil || out.Body[i-bodyAt] != b[i]^0x40 {
					t.Fatalf("len %d: flipped body byte %d: %v", n, i, err)
				}
			} else if err == nil {
				t.Fatalf("len %d: flipped byte %d accepted", n, i)
			}
			if decodeObject(&out, b[:i]) == nil {
				t.Fatalf("len %d: truncation to %d accepted", n, i)
			}
		}
	}
}

func TestSliceEntry(t *testing.T) {
	data := []byte("slice data")
	v := append(appendSliceHeader(nil, 7, 3, data), data...)
	if got, err := decodeSlice(v, 7, 3, len(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("decode: %q %v", got, err)
	}
	for _, tc := range []struct {
		gen     uint64
		idx, ln int
	}{{8, 3, len(data)}, {7, 4, len(data)}, {7, 3, len(data) + 1}} {
		if _, err := decodeSlice(v, tc.gen, tc.idx, tc.ln); err == nil {
			t.Errorf("%+v accepted", tc)
		}
	}
	// The header is checksummed: every flip there is refused.
	for i := range sliceHeaderLen {
		c := append([]byte(nil), v...)
		c[i] ^= 0x10
		if _, err := decodeSlice(c, 7, 3, len(data)); err == nil {
			t.Errorf("flipped header byte %d accepted", i)
		}
	}
	// The data is not (the store checks it where it can go bad).
	v[len(v)-1] ^= 1
	if got, err := decodeSlice(v, 7, 3, len(data)); err != nil || got[len(got)-1] != data[len(data)-1]^1 {
		t.Errorf("data flip: %q %v", got, err)
	}
}

// TestOldVersions: records and slices of another format version (version
// 1 checksummed the bodies) are errRecordVersion, never decoded.
func TestOldVersions(t *testing.T) {
	rec := appendObject(nil, sampleObject(5))
	rec[3] = 1
	var o object
	if err := decodeObject(&o, rec); !isOldVersion(err) {
		t.Errorf("v1 record: %v", err)
	}
	data := []byte("slice data")
	v := append(appendSliceHeader(nil, 7, 3, data), data...)
	v[2] = 1
	if _, err := decodeSlice(v, 7, 3, len(data)); !isOldVersion(err) {
		t.Errorf("v1 slice: %v", err)
	}
	v[0] = 'X'
	if _, err := decodeSlice(v, 7, 3, len(data)); err == nil || isOldVersion(err) {
		t.Errorf("bad magic: %v", err)
	}
}

func TestKeysDisjoint(t *testing.T) {
	// A slice key never equals a record key, nor another object's slice key.
	seen := map[string]string{}
	for _, k := range []string{"", "a", "a\x00\x00\x00\x01", "http://x/", "http://x/\x00\x00\x00\x00\x00\x00\x00\x09"} {
		add := func(key []byte, what string) {
			if prev, dup := seen[string(key)]; dup {
				t.Fatalf("%s collides with %s", what, prev)
			}
			seen[string(key)] = what
		}
		add(metaKey(nil, []byte(k)), "meta "+k)
		for i := range 3 {
			add(sliceKey(nil, []byte(k), i), "slice "+k)
		}
	}
}

func FuzzDecodeObject(f *testing.F) {
	for _, n := range []int{0, 5, 40} {
		f.Add(appendObject(nil, sampleObject(n)))
	}
	f.Add(appendObject(nil, digestObject(40)))
	f.Add([]byte("STO\x01"))
	f.Add([]byte("STO\x02"))
	f.Add([]byte("STO\x03"))
	// Records whose header blocks the decoder must refuse: they differ from
	// a valid one only there, with the checksum fixed up.
	for _, blk := range []string{"content-type: a\r\n", "A:b\r\n", "A: b\n", "A: b\rc\r\n", ": b\r\n", "A: b"} {
		f.Add(withHeaderBlock(appendObject(nil, noHeaders()), blk))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var o object
		if decodeObject(&o, b) != nil {
			return
		}
		if len(o.Headers) > maxStoredHeader {
			t.Fatalf("%d headers", len(o.Headers))
		}
		if got := appendHeaderBlock(nil, o.Headers); !bytes.Equal(got, appendBytes(nil, o.HeaderBlock)) {
			t.Fatalf("header block %q re-encodes as %q", o.HeaderBlock, got)
		}
		again := appendObject(nil, &o)
		var o2 object
		if err := decodeObject(&o2, again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(&o, &o2) {
			t.Fatalf("decode(encode(x)) != x")
		}
	})
}

func FuzzDecodeSlice(f *testing.F) {
	data := []byte("slice data")
	f.Add(append(appendSliceHeader(nil, 7, 3, data), data...), uint64(7), 3, len(data))
	f.Add([]byte("SL\x02\x00"), uint64(0), 0, 0)
	f.Fuzz(func(t *testing.T, v []byte, gen uint64, i, n int) {
		got, err := decodeSlice(v, gen, i, n)
		if err != nil {
			return
		}
		if len(got) != n || len(v) != sliceHeaderLen+n || !bytes.Equal(got, v[sliceHeaderLen:]) {
			t.Fatalf("decoded %d bytes of %d, want %d", len(got), len(v), n)
		}
	})
}

// BenchmarkDecodeObject: a 256 KiB inline record (the peer benchmark's
// 256 KiB hits);
// version 2 checksums its metadata only.
func BenchmarkDecodeObject(b *testing.B) {
	o := sampleObject(256 << 10)
	o.SliceSize = 1 << 20
	o.Body = bigBody(256 << 10)
	rec := appendObject(nil, o)
	var out object
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if err := decodeObject(&out, rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSlice: a 1 MiB slice (the default slice size).
func BenchmarkDecodeSlice(b *testing.B) {
	data := bigBody(1 << 20)
	v := append(appendSliceHeader(nil, 7, 3, data), data...)
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if _, err := decodeSlice(v, 7, 3, len(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// withHeaderBlock returns rec (an encoded record with no headers and the
// inline body "aaaaa"... of sampleObject(5)) with its empty header block
// replaced by blk and the checksum recomputed.
func withHeaderBlock(rec []byte, blk string) []byte {
	body := sampleObject(5).Body
	meta := rec[:len(rec)-4-len(body)]
	if meta[len(meta)-1] != 0 { // the empty block's length
		panic("record has headers")
	}
	out := append([]byte(nil), meta[:len(meta)-1]...)
	out = appendBytes(out, []byte(blk))
	sum := crc32.Checksum(out, crcTable)
	out = append(out, body...)
	return binary.BigEndian.AppendUint32(out, sum)
}

// TestHeaderBlock: the decoder accepts exactly the lines the encoder writes.
func TestHeaderBlock(t *testing.T) {
	for _, tc := range []struct {
		blk string
		ok  bool
	}{
		{"", true},
		{"A: b\r\n", true},
		{"Content-Type: text/plain\r\nEtag: \"x\"\r\nX-Empty: \r\n", true},
		{"X-A: a: b\r\n", true},        // a colon in the value
		{"Bad Name: v\r\n", true},      // not a token: kept as it is, as fasthttp does
		{"content-type: a\r\n", false}, // not canonical
		{"ETag: x\r\n", false},         // not canonical (fasthttp sends Etag)
		{"A:b\r\n", false},             // no space
		{"A: b\n", false},              // bare LF
		{"A: b\rc\r\n", false},         // CR in the value
		{"A\r: b\r\n", false},          // CR in the name
		{": b\r\n", false},             // empty name
		{"A: b", false},                // unterminated
		{"A: b\r\nC", false},           // trailing garbage
		{strings.Repeat("A: b\r\n", maxStoredHeader+1), false},
	} {
		var o object
		err := decodeObject(&o, withHeaderBlock(appendObject(nil, noHeaders()), tc.blk))
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.blk, err)
			continue
		}
		if err == nil && string(o.HeaderBlock) != tc.blk {
			t.Errorf("%q: block %q", tc.blk, o.HeaderBlock)
		}
	}
	// Names are written in canonical case; fields the wire form cannot
	// carry are left out.
	kvs := []headerKV{
		{[]byte("content-TYPE"), []byte("a")}, {[]byte("etag"), []byte(`"e"`)},
		{[]byte("x-cr"), []byte("a\rb")}, {[]byte("x:colon"), []byte("v")}, {nil, []byte("v")},
		{[]byte("x-e"), nil},
	}
	var o object
	if _, err := o.decodeHeaderBlock(appendHeaderBlock(nil, kvs)); err != nil {
		t.Fatal(err)
	}
	if want := "Content-Type: a\r\nEtag: \"e\"\r\nX-E: \r\n"; string(o.HeaderBlock) != want {
		t.Fatalf("block %q, want %q", o.HeaderBlock, want)
	}
}

func noHeaders() *object {
	o := sampleObject(5)
	o.Headers = nil
	return o
}

// typicalHeaders are the stored fields of a typical cacheable response.
var typicalHeaders = []headerKV{
	{[]byte("Cache-Control"), []byte("public, max-age=3600")},
	{[]byte("Content-Type"), []byte("text/html; charset=utf-8")},
	{[]byte("Date"), []byte("Wed, 02 Dec 2026 06:48:42 GMT")},
	{[]byte("Etag"), []byte(`"5d8c72a5edda8d6a"`)},
	{[]byte("Last-Modified"), []byte("Tue, 01 Dec 2026 10:00:00 GMT")},
	{[]byte("Accept-Ranges"), []byte("bytes")},
	{[]byte("X-Request-Id"), []byte("0f3a9c5e-1b7d-4e2a-9c3b-7d5e1f2a3b4c")},
}

// BenchmarkEncodeHeaderBlock: the header block of a typical cacheable
// response, encoded on every fill.
func BenchmarkEncodeHeaderBlock(b *testing.B) {
	buf := appendHeaderBlock(nil, typicalHeaders)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = appendHeaderBlock(buf[:0], typicalHeaders)
	}
}

// BenchmarkDecodeHeaderBlock: the header block of a typical cacheable
// response, decoded on every hit.
func BenchmarkDecodeHeaderBlock(b *testing.B) {
	blk := appendHeaderBlock(nil, typicalHeaders)
	var o object
	b.ReportAllocs()
	b.SetBytes(int64(len(blk)))
	for b.Loop() {
		if _, err := o.decodeHeaderBlock(blk); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWireField: a field the wire form cannot carry is left out of the
// header block, the others are written.
func TestWireField(t *testing.T) {
	for _, c := range []struct {
		k, v string
		want bool
	}{
		{"A", "b", true}, {"X-A", "a: b", true}, {"Bad Name", "v", true}, {"X-Empty", "", true},
		{"", "v", false}, {"A:B", "v", false}, {"A\rB", "v", false}, {"A\nB", "v", false},
		{"A", "b\rc", false}, {"A", "b\nc", false}, {"A", "b\r\n", false},
	} {
		kv := headerKV{Key: []byte(c.k), Value: []byte(c.v)}
		if got := wireField(kv); got != c.want {
			t.Errorf("wireField(%q: %q) = %v, want %v", c.k, c.v, got, c.want)
		}
		blk := appendHeaderBlock(nil, []headerKV{{[]byte("Z"), []byte("1")}, kv})
		if wrote := len(blk) > 1+len("Z: 1\r\n"); wrote != c.want {
			t.Errorf("%q: %q written: %v, want %v", c.k, c.v, wrote, c.want)
		}
	}
}

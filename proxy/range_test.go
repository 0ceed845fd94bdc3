package proxy

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/byterange"
)

func TestRangesFor(t *testing.T) {
	lm := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	date := lm.Add(time.Hour)
	etag := []byte(`"abc"`)
	all := []byterange.Range{{Start: 0, End: 999}}
	for _, tc := range []struct {
		name    string
		kv      []string
		want    []byterange.Range
		code    int
		size    int64
		wantNil bool
	}{
		{"none", nil, all, 200, 1000, false},
		{"single", []string{"Range", "bytes=10-19"}, []byterange.Range{{Start: 10, End: 19}}, 206, 1000, false},
		{"suffix", []string{"Range", "bytes=-10"}, []byterange.Range{{Start: 990, End: 999}}, 206, 1000, false},
		{"multi", []string{"Range", "bytes=0-0,500-"}, []byterange.Range{{Start: 0, End: 0}, {Start: 500, End: 999}}, 206, 1000, false},
		{"unsatisfiable", []string{"Range", "bytes=1000-"}, nil, 416, 1000, true},
		{"malformed", []string{"Range", "bytes=x-1"}, all, 200, 1000, false},
		{"unit", []string{"Range", "items=0-1"}, all, 200, 1000, false},
		{"too many", []string{"Range", "bytes=" + manyRanges(byterange.MaxSpecs+1)}, all, 200, 1000, false},
		{"if-range etag", []string{"Range", "bytes=1-2", "If-Range", `"abc"`}, []byterange.Range{{Start: 1, End: 2}}, 206, 1000, false},
		{"if-range other etag", []string{"Range", "bytes=1-2", "If-Range", `"zzz"`}, all, 200, 1000, false},
		{"if-range weak", []string{"Range", "bytes=1-2", "If-Range", `W/"abc"`}, all, 200, 1000, false},
		{"if-range date", []string{"Range", "bytes=1-2", "If-Range", lm.Format(http.TimeFormat)}, []byterange.Range{{Start: 1, End: 2}}, 206, 1000, false},
		{"if-range later date", []string{"Range", "bytes=1-2", "If-Range", date.Format(http.TimeFormat)}, all, 200, 1000, false},
		{"empty representation", []string{"Range", "bytes=0-"}, nil, 416, 0, true},
		{"empty no range", nil, nil, 200, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			for i := 0; i+1 < len(tc.kv); i += 2 {
				h.Add(tc.kv[i], tc.kv[i+1])
			}
			want := tc.want
			if tc.code == 200 { // the whole representation: no ranges
				want = nil
			}
			got, code := rangesFor(&h, tc.size, etag, lm, date)
			if code != tc.code || !equalRanges(got, want) || ((tc.wantNil || tc.code == 200) && got != nil) {
				t.Errorf("got %v %d, want %v %d", got, code, want, tc.code)
			}
		})
	}
}

func manyRanges(n int) string {
	var b []byte
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i*10), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(i*10+1), 10)
	}
	return string(b)
}

func equalRanges(a, b []byterange.Range) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRangeProbe(t *testing.T) {
	const sz = 1 << 20
	for _, tc := range []struct {
		in         string
		start, end int64
		ok         bool
	}{
		{"bytes=5-9", 5, 10, true},
		{"bytes=3000000-", 3000000, maxBodyLen, true},
		{"bytes=-500", 0, sz, true},
		{"bytes=10-20,-5", 10, 21, true},
		{"bytes=9-1", 0, 0, false},
		{"junk", 0, 0, false},
	} {
		s, e, ok := rangeProbe([]byte(tc.in), sz)
		if ok != tc.ok || s != tc.start || e != tc.end {
			t.Errorf("%q: got %d %d %v", tc.in, s, e, ok)
		}
	}
}

func TestValidators(t *testing.T) {
	lm := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	obj := func(etag string, lm, date time.Time) *object {
		o := &object{LastModified: lm, Date: date}
		if etag != "" {
			o.ETag = []byte(etag)
		}
		return o
	}
	later := lm.Add(time.Hour)
	for _, tc := range []struct {
		name string
		a, b *object
		same bool
	}{
		{"strong equal", obj(`"a"`, time.Time{}, later), obj(`"a"`, time.Time{}, later), true},
		{"strong differ", obj(`"a"`, time.Time{}, later), obj(`"b"`, time.Time{}, later), false},
		{"weak", obj(`W/"a"`, lm, later), obj(`W/"a"`, lm, later), false},
		{"etag vs none", obj(`"a"`, lm, later), obj("", lm, later), false},
		{"lm equal", obj("", lm, later), obj("", lm, later), true},
		{"lm differ", obj("", lm, later), obj("", lm.Add(time.Second), later), false},
		{"lm too recent", obj("", lm, lm.Add(time.Second)), obj("", lm, lm.Add(time.Second)), false},
		{"none", obj("", time.Time{}, later), obj("", time.Time{}, later), false},
	} {
		if got := sameValidator(tc.a, tc.b); got != tc.same {
			t.Errorf("%s: sameValidator = %v", tc.name, got)
		}
	}
}

// memSource is a rangeSource over bytes, reading at most step bytes a call.
type memSource struct {
	b     []byte
	step  int
	last  int64
	lends bool
	t     *testing.T
}

func (m *memSource) readAt(p []byte, off, end int64) (int, error) {
	if off < m.last || int64(len(p)) > end-off {
		m.t.Fatalf("readAt(%d, off %d, end %d) after %d", len(p), off, end, m.last)
	}
	m.last = off
	return copy(p[:min(len(p), m.step)], m.b[off:]), nil
}

// lend lends at most step bytes when m.lends, else nothing.
func (m *memSource) lend(off, end int64) ([]byte, error) {
	if !m.lends {
		return nil, nil
	}
	if off < m.last || off >= end {
		m.t.Fatalf("lend(off %d, end %d) after %d", off, end, m.last)
	}
	m.last = off
	return m.b[off:min(end, off+int64(m.step))], nil
}
func (m *memSource) close() {}

// TestRangeBodyMultipart: the streamed multipart body is exactly the
// framing helpers' bytes around the content, of length rangeLength, and a
// MIME reader gets each part's bytes back.
func TestRangeBodyMultipart(t *testing.T) {
	content := bigBody(10000)
	for _, tc := range []struct {
		ranges []byterange.Range
		ctype  string
		multi  bool
	}{
		{[]byterange.Range{{Start: 0, End: 9}}, "", false},
		{[]byterange.Range{{Start: 0, End: 9}, {Start: 100, End: 100}, {Start: 9990, End: 9999}}, "text/plain", true},
		{[]byterange.Range{{Start: 5, End: 5000}, {Start: 6000, End: 9999}}, "", true},
	} {
		boundary := []byte("strata-0123456789abcdef")
		var want []byte
		if tc.multi {
			for i, r := range tc.ranges {
				want = byterange.AppendPartHeader(want, i == 0, boundary, []byte(tc.ctype), r, int64(len(content)))
				want = append(want, content[r.Start:r.End+1]...)
			}
			want = byterange.AppendPartsEnd(want, boundary)
		} else {
			want = content[tc.ranges[0].Start : tc.ranges[0].End+1]
		}
		for _, step := range []int{1, 7, 1 << 20} {
			for mode := range 3 { // Read; WriteTo copying; WriteTo lending
				b := &rangeBody{src: &memSource{b: content, step: step, t: t, lends: mode == 2}, ranges: tc.ranges, multi: tc.multi,
					boundary: boundary, ctype: []byte(tc.ctype), size: int64(len(content))}
				var got []byte
				var err error
				if mode == 0 {
					got, err = io.ReadAll(b)
				} else {
					var out bytes.Buffer
					_, err = b.WriteTo(&out)
					got = out.Bytes()
				}
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%v step %d mode %d: %v, %d bytes, want %d", tc.ranges, step, mode, err, len(got), len(want))
				}
			}
			got, _ := io.ReadAll(&rangeBody{src: &memSource{b: content, step: step, t: t}, ranges: tc.ranges, multi: tc.multi,
				boundary: boundary, ctype: []byte(tc.ctype), size: int64(len(content))})
			if n := rangeLength(tc.ranges, tc.multi, boundary, []byte(tc.ctype), int64(len(content))); n != int64(len(got)) {
				t.Fatalf("rangeLength %d, body %d", n, len(got))
			}
		}
		if tc.multi {
			checkMultipart(t, want, "multipart/byteranges; boundary="+string(boundary), content, tc.ranges)
		}
	}
}

// checkMultipart parses a multipart/byteranges body and compares each part
// with content.
func checkMultipart(t *testing.T, body []byte, ctype string, content []byte, ranges []byterange.Range) {
	t.Helper()
	_, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for i, r := range ranges {
		p, err := mr.NextPart()
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		want := string(byterange.AppendContentRange(nil, r, int64(len(content))))
		if got := p.Header.Get("Content-Range"); got != want {
			t.Errorf("part %d Content-Range %q, want %q", i, got, want)
		}
		data, _ := io.ReadAll(p)
		if !bytes.Equal(data, content[r.Start:r.End+1]) {
			t.Errorf("part %d: %d bytes differ", i, len(data))
		}
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Errorf("after the parts: %v", err)
	}
}

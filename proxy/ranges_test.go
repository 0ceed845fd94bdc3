package proxy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseRange(t *testing.T) {
	type rs = []ByteRange
	tests := []struct {
		name string
		in   string
		size int64
		want rs
		err  error
	}{
		{"§14.1.2 first-last", "bytes=0-99", 1000, rs{{0, 99}}, nil},
		{"§14.1.2 unit is case-insensitive", "Bytes=0-0", 10, rs{{0, 0}}, nil},
		{"§14.1.2 open end", "bytes=500-", 1000, rs{{500, 999}}, nil},
		{"§14.1.2 last clamped", "bytes=500-5000", 1000, rs{{500, 999}}, nil},
		{"§14.1.2 suffix", "bytes=-100", 1000, rs{{900, 999}}, nil},
		{"§14.1.2 suffix longer than the representation", "bytes=-5000", 1000, rs{{0, 999}}, nil},
		{"§14.1.2 whole", "bytes=0-", 1, rs{{0, 0}}, nil},
		{"§14.6 several, sorted", "bytes=500-599, 0-99", 1000, rs{{0, 99}, {500, 599}}, nil},
		{"§14.6 overlapping coalesced", "bytes=0-99,50-150,-10", 1000, rs{{0, 150}, {990, 999}}, nil},
		{"§14.6 adjacent coalesced", "bytes=0-9,10-19", 100, rs{{0, 19}}, nil},
		{"§14.6 contained coalesced", "bytes=0-99,10-19", 100, rs{{0, 99}}, nil},
		{"§5.6.1 empty list elements and whitespace", "bytes= ,0-1 , ,", 10, rs{{0, 1}}, nil},
		{"§14.1.2 unsatisfiable dropped among satisfiable", "bytes=2000-3000,0-0", 1000, rs{{0, 0}}, nil},
		{"§14.1.2 huge numbers saturate", "bytes=0-99999999999999999999999", 10, rs{{0, 9}}, nil},
		{"§15.5.17 first past the end", "bytes=1000-", 1000, nil, ErrUnsatisfiableRange},
		{"§15.5.17 suffix of zero", "bytes=-0", 1000, nil, ErrUnsatisfiableRange},
		{"§15.5.17 empty representation", "bytes=0-", 0, nil, ErrUnsatisfiableRange},
		{"§15.5.17 empty representation, suffix", "bytes=-5", 0, nil, ErrUnsatisfiableRange},
		{"§14.2 last before first is invalid", "bytes=5-1", 1000, nil, ErrBadRange},
		{"§14.2 other unit", "items=0-1", 1000, nil, ErrBadRange},
		{"§14.2 no unit", "0-1", 1000, nil, ErrBadRange},
		{"§14.2 space before =", "bytes =0-1", 1000, nil, ErrBadRange},
		{"§14.2 garbage", "bytes=a-b", 1000, nil, ErrBadRange},
		{"§14.2 lone dash", "bytes=-", 1000, nil, ErrBadRange},
		{"§14.2 no dash", "bytes=5", 1000, nil, ErrBadRange},
		{"§14.2 negative", "bytes=--5", 1000, nil, ErrBadRange},
		{"§14.2 empty set", "bytes=", 1000, nil, ErrBadRange},
		{"§14.2 one bad spec spoils the field", "bytes=0-1,x", 1000, nil, ErrBadRange},
		{"unknown size", "bytes=0-1", -1, nil, ErrBadRange},
		{"§14.2 too many ranges", "bytes=" + strings.Repeat("0-0,", MaxRanges+1), 1000, nil, ErrTooManyRanges},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []ByteRange{{7, 7}}
			got, err := ParseRange(dst, []byte(tt.in), tt.size)
			if !errors.Is(err, tt.err) || (err != nil) != (tt.err != nil) {
				t.Fatalf("ParseRange(%q) error %v, want %v", tt.in, err, tt.err)
			}
			if got[0] != (ByteRange{7, 7}) {
				t.Fatalf("dst prefix overwritten: %v", got)
			}
			if fmt.Sprint(got[1:]) != fmt.Sprint(tt.want) && !(len(got) == 1 && tt.want == nil) {
				t.Errorf("ParseRange(%q) = %v, want %v", tt.in, got[1:], tt.want)
			}
		})
	}
	if _, err := ParseRange(nil, []byte("bytes="+strings.Repeat("0-0,", MaxRanges)), 10); err != nil {
		t.Errorf("exactly MaxRanges ranges refused: %v", err)
	}
}

func TestContentRange(t *testing.T) {
	if got := string(AppendContentRange(nil, ByteRange{0, 99}, 1000)); got != "bytes 0-99/1000" {
		t.Errorf("AppendContentRange = %q", got)
	}
	if got := string(AppendUnsatisfiedRange(nil, 1000)); got != "bytes */1000" {
		t.Errorf("AppendUnsatisfiedRange = %q", got)
	}
	if n := (ByteRange{5, 9}).Len(); n != 5 {
		t.Errorf("Len = %d", n)
	}
}

func TestIfRange(t *testing.T) {
	lm := testNow.Add(-time.Hour)
	lmDate := "If-Range: " + testDate(-3600)
	tests := []struct {
		name     string
		headers  []string
		etag     string
		lm, date time.Time
		want     bool
	}{
		{"§13.1.5 absent", nil, `"a"`, lm, testNow, true},
		{"§13.1.5 strong match", []string{`If-Range: "a"`}, `"a"`, lm, testNow, true},
		{"§13.1.5 mismatch", []string{`If-Range: "b"`}, `"a"`, lm, testNow, false},
		{"§13.1.5 weak never matches", []string{`If-Range: W/"a"`}, `W/"a"`, lm, testNow, false},
		{"§13.1.5 weak stored tag", []string{`If-Range: "a"`}, `W/"a"`, lm, testNow, false},
		{"§13.1.5 date equal and strong", []string{lmDate}, "", lm, testNow, true},
		{"§8.8.2.2 date within 60s of Date is weak", []string{lmDate}, "", lm, lm.Add(30 * time.Second), false},
		{"§13.1.5 date differs", []string{"If-Range: " + testDate(-3599)}, "", lm, testNow, false},
		{"§13.1.5 no Last-Modified", []string{lmDate}, `"a"`, time.Time{}, testNow, false},
		{"§13.1.5 invalid value", []string{"If-Range: yesterday"}, `"a"`, lm, testNow, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest(t, "GET", "/", tt.headers...)
			if got := IfRange(&req.Header, []byte(tt.etag), tt.lm, tt.date); got != tt.want {
				t.Errorf("IfRange = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseRangeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	v := []byte("bytes=500-599, 0-99, -10")
	dst := make([]ByteRange, 0, 8)
	if n := testing.AllocsPerRun(100, func() { dst, _ = ParseRange(dst[:0], v, 1000) }); n != 0 {
		t.Errorf("ParseRange allocates %v times per run, want 0", n)
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-99", "bytes=-5", "bytes=5-", "bytes=0-1,1-2,5-9", "bytes=99999999999999999999-", "bytes=,", "x=1-2"} {
		f.Add(s, int64(1000))
	}
	f.Add("bytes=0-", int64(0))
	f.Fuzz(func(t *testing.T, s string, size int64) {
		got, err := ParseRange(nil, []byte(s), size)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("%q: error %v with ranges %v", s, err, got)
			}
			if !errors.Is(err, ErrBadRange) && !errors.Is(err, ErrTooManyRanges) && !errors.Is(err, ErrUnsatisfiableRange) {
				t.Fatalf("%q: unexpected error %v", s, err)
			}
			return
		}
		if len(got) == 0 || len(got) > MaxRanges {
			t.Fatalf("%q: %d ranges without error", s, len(got))
		}
		for i, r := range got {
			if r.Start < 0 || r.End < r.Start || r.End >= size {
				t.Fatalf("%q size %d: range %v out of bounds", s, size, r)
			}
			if i > 0 && r.Start <= got[i-1].End+1 {
				t.Fatalf("%q: ranges not sorted and merged: %v", s, got)
			}
		}
	})
}

func TestMultipart(t *testing.T) {
	content := []byte("0123456789abcdefghij")
	size := int64(len(content))
	ranges := []ByteRange{{0, 2}, {10, 19}}
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

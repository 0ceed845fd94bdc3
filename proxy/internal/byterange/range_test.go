package byterange

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	type rs = []Range
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
		{"§15.5.17 first past the end", "bytes=1000-", 1000, nil, ErrUnsatisfiable},
		{"§15.5.17 suffix of zero", "bytes=-0", 1000, nil, ErrUnsatisfiable},
		{"§15.5.17 empty representation", "bytes=0-", 0, nil, ErrUnsatisfiable},
		{"§15.5.17 empty representation, suffix", "bytes=-5", 0, nil, ErrUnsatisfiable},
		{"§14.2 last before first is invalid", "bytes=5-1", 1000, nil, ErrInvalid},
		{"§14.2 other unit", "items=0-1", 1000, nil, ErrInvalid},
		{"§14.2 no unit", "0-1", 1000, nil, ErrInvalid},
		{"§14.2 space before =", "bytes =0-1", 1000, nil, ErrInvalid},
		{"§14.2 garbage", "bytes=a-b", 1000, nil, ErrInvalid},
		{"§14.2 lone dash", "bytes=-", 1000, nil, ErrInvalid},
		{"§14.2 no dash", "bytes=5", 1000, nil, ErrInvalid},
		{"§14.2 negative", "bytes=--5", 1000, nil, ErrInvalid},
		{"§14.2 empty set", "bytes=", 1000, nil, ErrInvalid},
		{"§14.2 one bad spec spoils the field", "bytes=0-1,x", 1000, nil, ErrInvalid},
		{"unknown size", "bytes=0-1", -1, nil, ErrInvalid},
		{"§14.2 too many ranges", "bytes=" + strings.Repeat("0-0,", MaxSpecs+1), 1000, nil, ErrTooMany},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []Range{{7, 7}}
			got, err := Parse(dst, []byte(tt.in), tt.size)
			if !errors.Is(err, tt.err) || (err != nil) != (tt.err != nil) {
				t.Fatalf("Parse(%q) error %v, want %v", tt.in, err, tt.err)
			}
			if got[0] != (Range{7, 7}) {
				t.Fatalf("dst prefix overwritten: %v", got)
			}
			if fmt.Sprint(got[1:]) != fmt.Sprint(tt.want) && !(len(got) == 1 && tt.want == nil) {
				t.Errorf("Parse(%q) = %v, want %v", tt.in, got[1:], tt.want)
			}
		})
	}
	if _, err := Parse(nil, []byte("bytes="+strings.Repeat("0-0,", MaxSpecs)), 10); err != nil {
		t.Errorf("exactly MaxSpecs specs refused: %v", err)
	}
}

func TestParseAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	v := []byte("bytes=500-599, 0-99, -10")
	dst := make([]Range, 0, 8)
	if n := testing.AllocsPerRun(100, func() { dst, _ = Parse(dst[:0], v, 1000) }); n != 0 {
		t.Errorf("Parse allocates %v times per run, want 0", n)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"bytes=0-99", "bytes=-5", "bytes=5-", "bytes=0-1,1-2,5-9", "bytes=99999999999999999999-", "bytes=,", "x=1-2"} {
		f.Add(s, int64(1000))
	}
	f.Add("bytes=0-", int64(0))
	f.Fuzz(func(t *testing.T, s string, size int64) {
		got, err := Parse(nil, []byte(s), size)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("%q: error %v with ranges %v", s, err, got)
			}
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooMany) && !errors.Is(err, ErrUnsatisfiable) {
				t.Fatalf("%q: unexpected error %v", s, err)
			}
			return
		}
		if len(got) == 0 || len(got) > MaxSpecs {
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

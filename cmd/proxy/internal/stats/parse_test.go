package stats

import (
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string][]Sample
		err      bool
	}{
		{"comments and blanks", "# HELP x y\n# TYPE x counter\n\nx 1\n", map[string][]Sample{"x": {{"", 1}}}, false},
		{"labels", `a{b="c",d="e"} 2.5` + "\n", map[string][]Sample{"a": {{`b="c",d="e"`, 2.5}}}, false},
		{"brace and quote in a value", `a{b="}\"{"} 3` + "\n", map[string][]Sample{"a": {{`b="}\"{"`, 3}}}, false},
		{"timestamp", "a 4 1700000000000\n", map[string][]Sample{"a": {{"", 4}}}, false},
		{"special values", "a{le=\"+Inf\"} +Inf\nb NaN\n", map[string][]Sample{"a": {{`le="+Inf"`, math.Inf(1)}}, "b": {{"", math.NaN()}}}, false},
		{"two samples", "a{x=\"1\"} 1\na{x=\"2\"} 2\n", map[string][]Sample{"a": {{`x="1"`, 1}, {`x="2"`, 2}}}, false},
		{"no value", "a\n", nil, true},
		{"bad value", "a one\n", nil, true},
		{"unclosed labels", "a{b=\"c\" 1\n", nil, true},
		{"extra fields", "a 1 2 3\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for name, ws := range tc.want {
				gs := got[name]
				if len(gs) != len(ws) {
					t.Fatalf("%s: got %v, want %v", name, gs, ws)
				}
				for i := range ws {
					same := gs[i].Value == ws[i].Value || math.IsNaN(gs[i].Value) && math.IsNaN(ws[i].Value)
					if gs[i].Labels != ws[i].Labels || !same {
						t.Errorf("%s[%d]: got %+v, want %+v", name, i, gs[i], ws[i])
					}
				}
			}
		})
	}
}

func TestSum(t *testing.T) {
	s, err := Parse(strings.NewReader(`d{reason="queue",dev="0"} 1
d{reason="queue",dev="1"} 2
d{reason="queued"} 40
d{reason="admission",note="reason=\"queue\""} 100
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pairs []string
		want  float64
	}{
		{nil, 143},
		{[]string{`reason="queue"`}, 3},
		{[]string{`reason="queue"`, `dev="1"`}, 2},
		{[]string{`reason="admission"`}, 100},
		{[]string{`reason="none"`}, 0},
	} {
		if got := s.Sum("d", tc.pairs...); got != tc.want {
			t.Errorf("Sum(d, %q) = %v, want %v", tc.pairs, got, tc.want)
		}
	}
	if s.Sum("missing") != 0 || s.Has("missing") || !s.Has("d") {
		t.Error("a missing metric must sum to 0 and not be had")
	}
}

// FuzzParse: no input panics, and what parses keeps its sample count
// (one sample a non-comment line).
func FuzzParse(f *testing.F) {
	f.Add("# HELP a b\na{b=\"c\"} 1\n")
	f.Add("a{b=\"}\\\"\"} +Inf 17\n")
	f.Add("a{")
	f.Add("{} 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		n := 0
		for _, l := range strings.Split(in, "\n") {
			if l = strings.TrimSpace(l); l != "" && l[0] != '#' {
				n++
			}
		}
		got := 0
		for name, xs := range s {
			got += len(xs)
			for _, x := range xs {
				_ = s.Sum(name, x.Labels)
				_ = labelValue(x.Labels, "le")
			}
		}
		if got != n {
			t.Errorf("%q: %d samples, want %d", in, got, n)
		}
	})
}

package httpcache

import (
	"strings"
	"testing"
)

// acceptSpellings are twenty ways browsers, libraries and bots spell
// "br or gzip, br preferred", "gzip only" and "nothing" (the e2e test of
// the proxy uses the same list).
var acceptSpellings = []struct{ in, want string }{
	{"gzip, deflate, br", "br"},
	{"gzip, deflate, br, zstd", "br"},
	{"br, gzip", "br"},
	{"BR,GZIP", "br"},
	{"gzip,br;q=1.0", "br"},
	{"br;q=1.0, gzip;q=0.8, *;q=0.1", "br"},
	{"deflate, gzip;q=1.0, *;q=0.5", "gzip"},
	{"gzip", "gzip"},
	{"x-gzip", "gzip"},
	{"gzip;q=1, br;q=0", "gzip"},
	{"gzip, deflate", "gzip"},
	{" gzip ,identity", "gzip"},
	{"*", "br"},
	{"identity", "identity"},
	{"", "identity"},
	{"deflate", "identity"},
	{"br;q=0, gzip;q=0", "identity"},
	{"*;q=0", "identity"},
	{"compress, zstd", "identity"},
	{"gzip;q=2", "identity"},
}

func TestNormalAcceptEncoding(t *testing.T) {
	tests := append([]struct{ in, want string }{
		{"gzip;q=0.5, br;q=0.4", "gzip"},
		{"gzip;q=0.5, br;q=0.5", "br"},
		{"gzip;q=0.001", "gzip"},
		{"gzip;q=0.000", "identity"},
		{"gzip;q=1.000", "gzip"},
		{"gzip;q=1.001", "identity"},
		{"gzip;q=0.5000", "identity"},
		{"gzip;q=", "identity"},
		{"gzip;Q=0", "identity"},
		{"gzip ; q = 0", "identity"},
		{"gzip;level=9", "gzip"},
		{"gzip;q=0, *", "br"},
		{"br;q=0, *;q=0.3", "gzip"},
		{",,,", "identity"},
		{"gzip;q=0, gzip", "gzip"}, // repeated: the higher weight
	}, acceptSpellings...)
	for _, tt := range tests {
		var lines [][]byte
		if tt.in != "" {
			lines = [][]byte{[]byte(tt.in)}
		}
		if got := string(NormalAcceptEncoding(lines)); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := string(NormalAcceptEncoding([][]byte{[]byte("deflate"), []byte("gzip")})); got != "gzip" {
		t.Errorf("two lines: %q, want gzip", got)
	}
	if n := len(distinct(acceptSpellings)); n > 3 {
		t.Errorf("%d normalised values for the spellings, want at most 3", n)
	}
}

func distinct(s []struct{ in, want string }) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x.want] = true
	}
	return m
}

func TestNormalAcceptEncodingAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	lines := [][]byte{[]byte("br;q=1.0, gzip;q=0.8, *;q=0.1")}
	if n := testing.AllocsPerRun(100, func() { NormalAcceptEncoding(lines) }); n != 0 {
		t.Errorf("allocates %v times per run, want 0", n)
	}
}

// FuzzNormalAcceptEncoding: no panics; the answer is one of the three
// values; a coding refused with q=0 (and listed once) is never chosen.
func FuzzNormalAcceptEncoding(f *testing.F) {
	for _, s := range acceptSpellings {
		f.Add(s.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := string(NormalAcceptEncoding([][]byte{[]byte(s)}))
		if got != "br" && got != "gzip" && got != "identity" {
			t.Fatalf("%q: %q", s, got)
		}
		for _, c := range []string{"br", "gzip"} {
			refused := c + ";q=0"
			if got == c && strings.Count(strings.ToLower(s), c) == 0 {
				if !strings.Contains(s, "*") {
					t.Fatalf("%q: %q chosen but never listed", s, c)
				}
			}
			var again string
			if s2 := refused + ", " + s; !strings.Contains(strings.ToLower(s), c) {
				again = string(NormalAcceptEncoding([][]byte{[]byte(s2)}))
				if again == c {
					t.Fatalf("%q: %q chosen though refused", s2, c)
				}
			}
		}
	})
}

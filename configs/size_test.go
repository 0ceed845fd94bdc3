package configs

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // -1: error
	}{
		{"0", 0},
		{"1", 1},
		{"4096", 4096},
		{"1k", 1024},
		{"1K", 1024},
		{"1Ki", 1024},
		{"1KiB", 1024},
		{"1kib", 1024},
		{"1kB", 1000},
		{"1KB", 1000},
		{"256k", 256 << 10},
		{"64MiB", 64 << 20},
		{"64m", 64 << 20},
		{"64MB", 64e6},
		{"1GiB", 1 << 30},
		{"4GiB", 4 << 30},
		{"1g", 1 << 30},
		{"2TiB", 2 << 40},
		{"1TB", 1e12},
		{"1.5GiB", 3 << 29},
		{"0.5k", 512},
		{"0.1k", 102}, // rounded down
		{"1.000000001GiB", 1<<30 + 1},
		{"10B", 10},
		{"10 MiB", 10 << 20},
		{" 10MiB ", 10 << 20},
		{"9223372036854775807", math.MaxInt64},
		{"8388607TiB", 8388607 << 40},
		{"", -1},
		{"k", -1},
		{"MiB", -1},
		{"-1", -1},
		{"-1MiB", -1},
		{"+1", -1},
		{"1e6", -1},
		{"1.5", -1},   // a fraction needs a unit
		{"1.", -1},    // digits on both sides
		{".5k", -1},   // digits on both sides
		{"1..5k", -1}, // one dot
		{"1.0000000001k", -1},
		{"1 2k", -1},
		{"1  k", -1},
		{"1PiB", -1},
		{"1xb", -1},
		{"9223372036854775808", -1},
		{"8388608TiB", -1},
		{"8388607.99TiB", 8388607<<40 + 1088516511498},
		{"9223372.9TB", -1}, // the fraction overflows
		{"0x10", -1},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if tc.want < 0 {
				if err == nil || !errors.Is(err, ErrSize) {
					t.Fatalf("ParseSize(%q) = %d, %v; want an ErrSize error", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]int64{"64MiB/s": 64 << 20, "64MiB": 64 << 20, "100": 100, "1k/s": 1024} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"/s", "1/m", "-1/s", "fast"} {
		if _, err := ParseRate(in); !errors.Is(err, ErrSize) {
			t.Errorf("ParseRate(%q): err %v, want ErrSize", in, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "1", 1000: "1000", 1024: "1KiB", 3 << 29: "1536MiB",
		1 << 30: "1GiB", 5 << 40: "5TiB", math.MaxInt64: "9223372036854775807"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzParseSize: no panics; accepted values are non-negative and round-trip
// through FormatSize; plain integers parse to themselves.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "1k", "1.5GiB", "64MB", "10 MiB", "-1", "1..5k", "9223372036854775807", "8388607.99TiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, n)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("round trip of %d via %q: %d, %v", n, FormatSize(n), back, err)
		}
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && v >= 0 && v != n {
			t.Fatalf("ParseSize(%q) = %d, want %d", s, n, v)
		}
		if r, err := ParseRate(s + "/s"); err != nil || r != n {
			t.Fatalf("ParseRate(%q/s) = %d, %v; want %d", s, r, err, n)
		}
	})
}

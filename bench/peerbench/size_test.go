package main

import (
	"errors"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"1k", 1 << 10, false}, {"256k", 256 << 10, false}, {"64MiB", 64 << 20, false},
		{"1GiB", 1 << 30, false}, {"256MiB", 256 << 20, false}, {"2g", 2 << 30, false},
		{"1024", 1024, false}, {"0", 0, false}, {" 8kb ", 8 << 10, false},
		{"", 0, true}, {"k", 0, true}, {"-1k", 0, true}, {"1.5MiB", 0, true},
		{"2TiB", 0, true}, {"99999999999GiB", 0, true}, {"12x", 0, true},
	} {
		got, err := parseSize(tc.in)
		if tc.err {
			if !errors.Is(err, ErrSize) {
				t.Errorf("parseSize(%q) = %d, %v; want ErrSize", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, n := range []int64{1, 1000, 1 << 10, 3 << 20, 64 << 20, 1 << 30, 5 << 30, 1<<30 + 1} {
		got, err := parseSize(formatSize(n))
		if err != nil || got != n {
			t.Errorf("parseSize(formatSize(%d)=%q) = %d, %v", n, formatSize(n), got, err)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1k", "64MiB", "1GiB", "", "-1", "9223372036854775807", "1kib"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err == nil && (n < 0 || n > maxSize) {
			t.Fatalf("parseSize(%q) = %d out of range", s, n)
		}
	})
}

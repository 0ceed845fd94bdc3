package main

import "testing"

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: error
	}{
		{"4096", 4096}, {"1GiB", 1 << 30}, {"512MiB", 512 << 20}, {"64k", 64 << 10}, {"2G", 2 << 30},
		{"1TB", 1 << 40}, {"", 0}, {"GiB", 0}, {"-1M", 0}, {"1.5G", 0}, {"0", 0},
	}
	for _, tc := range tests {
		got, err := parseSize(tc.in)
		if (err != nil) != (tc.want == 0) || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	f.Add("1GiB")
	f.Fuzz(func(t *testing.T, s string) {
		parseSize(s) // must not panic
	})
}

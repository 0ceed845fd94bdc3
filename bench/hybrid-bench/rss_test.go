package main

import (
	"strings"
	"testing"
)

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		status string
		want   int64
	}{
		{"Name:\tx\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 100 kB\n", 123456 << 10},
		{"VmHWM: 1 kB", 1024},
		{"VmRSS:\t 100 kB\n", 0},
		{"VmHWM:\t 12 MB\n", 0},
		{"VmHWM:\t -5 kB\n", 0},
		{"VmHWM:\t x kB\n", 0},
		{"VmHWM:\n", 0},
		{"", 0},
	}
	for _, tc := range tests {
		if got := parseVmHWM([]byte(tc.status)); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.status, got, tc.want)
		}
	}
}

func TestRSSReport(t *testing.T) {
	r := rssReport{FlushBuffers: 32 << 20}
	r.fill(64<<20, 1000)
	if r.BoundBytes != 64<<20+32<<20+32*1000+64<<20 {
		t.Fatalf("bound %d", r.BoundBytes)
	}
	if r.PeakBytes <= 0 || !r.within() {
		t.Fatalf("this test's own peak RSS %d should be known and under %d", r.PeakBytes, r.BoundBytes)
	}
	var b strings.Builder
	r.print(&b, 64<<20)
	if !strings.Contains(b.String(), "within") || !strings.Contains(b.String(), "32 B × 1000 disk entries") {
		t.Fatal(b.String())
	}
	r.PeakBytes = r.BoundBytes + 1
	b.Reset()
	r.print(&b, 64<<20)
	if !strings.Contains(b.String(), "OVER") {
		t.Fatal(b.String())
	}
}

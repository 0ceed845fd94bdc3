package main

import "testing"

func TestHeapLimit(t *testing.T) {
	const MiB = 1 << 20
	for _, tc := range []struct {
		cgroup, tier, want int64
	}{
		{0, 64 * MiB, 0}, // no cgroup
		{192 * MiB, 64 * MiB, 192*MiB - 64*MiB - 192*MiB/10}, // the bench's
		{1 << 30, 256 * MiB, 1<<30 - 256*MiB - (1<<30)/10},
		{100 * MiB, 64 * MiB, 0}, // too small for a useful limit
		{64 * MiB, 0, 48 * MiB},  // memory-only slack floor 16MiB
	} {
		if got := heapLimit(tc.cgroup, tc.tier); got != tc.want {
			t.Errorf("heapLimit(%d, %d) = %d, want %d", tc.cgroup, tc.tier, got, tc.want)
		}
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"201326592\n": 201326592, "max\n": 0, "9223372036854771712\n": 0, "": 0, "-1": 0, "12ab": 0,
	} {
		if got := parseCgroupLimit([]byte(in)); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
}

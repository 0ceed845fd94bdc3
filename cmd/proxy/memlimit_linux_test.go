package main

import "testing"

func TestCgroupPaths(t *testing.T) {
	for _, tc := range []struct{ in, v2, v1 string }{
		{"0::/system.slice/strata.service\n", "/system.slice/strata.service", ""},
		{"12:pids:/x\n5:memory:/peerbench-strata\n0::/\n", "/", "/peerbench-strata"},
		{"4:cpu,memory:/a\n", "", "/a"},
		{"4:memory:/../../etc\n", "", ""}, // refused: escapes the hierarchy
		{"garbage\n", "", ""},
	} {
		v2, v1 := cgroupPaths([]byte(tc.in))
		if v2 != tc.v2 || v1 != tc.v1 {
			t.Errorf("cgroupPaths(%q) = %q, %q; want %q, %q", tc.in, v2, v1, tc.v2, tc.v1)
		}
	}
}

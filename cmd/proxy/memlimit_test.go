package main

import "testing"

func TestParseCgroupLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"201326592\n": 201326592, "max\n": 0, "9223372036854771712\n": 0, "": 0, "-1": 0, "12ab": 0,
	} {
		if got := parseCgroupLimit([]byte(in)); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
}

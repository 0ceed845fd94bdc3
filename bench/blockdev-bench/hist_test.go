package main

import (
	"math"
	"testing"
)

func TestHist(t *testing.T) {
	for _, v := range []uint64{0, 1, 63, 64, 65, 100, 4095, 4096, 1e6, 1e9, 1e12} {
		got := valueOf(bucketOf(v))
		if math.Abs(float64(got)-float64(v)) > float64(v)/30+1 {
			t.Errorf("value %d lands in a bucket worth %d", v, got)
		}
	}
	var h hist
	for i := 1; i <= 1000; i++ {
		h.record(int64(i) * 1000)
	}
	if p50 := h.quantile(0.5); math.Abs(p50-500e3) > 500e3/30 {
		t.Errorf("p50 %v, want ~500000", p50)
	}
	if m := h.mean(); m != 500500 {
		t.Errorf("mean %v", m)
	}
}

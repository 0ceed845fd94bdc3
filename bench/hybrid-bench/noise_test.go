package main

import (
	"math"
	"runtime/metrics"
	"testing"
)

func TestParseSchedstat(t *testing.T) {
	tests := []struct {
		in          string
		exec, delay int64
		ok          bool
	}{
		{"123 456 7\n", 123, 456, true},
		{"1 2", 1, 2, true},
		{"1", 0, 0, false},
		{"x 2 3", 0, 0, false},
		{"-1 2 3", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tc := range tests {
		e, d, ok := parseSchedstat(tc.in)
		if e != tc.exec || d != tc.delay || ok != tc.ok {
			t.Errorf("%q: %d %d %v", tc.in, e, d, ok)
		}
	}
	if e, _ := schedstat(); e <= 0 {
		t.Errorf("this process ran %d ns by schedstat", e)
	}
}

func TestHistQuantile(t *testing.T) {
	h := &metrics.Float64Histogram{
		Buckets: []float64{0, 1, 2, 4, math.Inf(1)},
		Counts:  []uint64{90, 9, 0, 1},
	}
	for _, tc := range []struct{ q, want float64 }{{0.5, 1}, {0.9, 1}, {0.95, 2}, {0.99, 2}, {0.999, 4}, {1, 4}} {
		if got := histQuantile(h, tc.q); got != tc.want {
			t.Errorf("q %v: %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := histQuantile(&metrics.Float64Histogram{Buckets: []float64{0, 1}, Counts: []uint64{0}}, 0.5); got != 0 {
		t.Errorf("empty: %v", got)
	}
}

func TestNoiseBetween(t *testing.T) {
	a := takeNoise()
	x := 0
	for i := range 10_000_000 {
		x += i ^ x
	}
	_ = x
	n := noiseBetween(a, takeNoise())
	if n.CPUSec <= 0 || n.RunQueueSec < 0 {
		t.Fatalf("%+v", n)
	}
}

package main

import "math/bits"

// hist is a log-linear latency histogram: exact below 64 ns, then 32
// sub-buckets per power of two (about 3% resolution). One per goroutine,
// merged at the end, so recording is a few instructions with no sharing.
type hist struct {
	counts [64 + 58*32]uint64
	n, sum uint64
}

func bucketOf(v uint64) int {
	if v < 64 {
		return int(v)
	}
	shift := bits.Len64(v) - 6
	return 64 + (shift-1)*32 + int(v>>shift) - 32
}

// valueOf is the midpoint of bucket i.
func valueOf(i int) uint64 {
	if i < 64 {
		return uint64(i)
	}
	shift := (i-64)/32 + 1
	m := uint64((i-64)%32 + 32)
	return m<<shift + (uint64(1)<<shift)/2
}

func (h *hist) record(ns int64) {
	v := uint64(max(ns, 0))
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += v
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
}

func (h *hist) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.n)
}

// quantile returns the value at quantile q in [0, 1].
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n-1)) + 1
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			return float64(valueOf(i))
		}
	}
	return float64(valueOf(len(h.counts) - 1))
}

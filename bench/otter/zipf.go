package main

import (
	"math"
	"math/rand/v2"
	"sort"
)

// zipf draws ranks in [0, n) with P(rank i) ∝ 1/(i+1)^s for any s > 0
// (math/rand's Zipf needs s > 1), by inverse CDF: a uniform draw scaled to
// the total weight, then a binary search over the cumulative weights.
type zipf struct {
	cum []float64
	r   *rand.Rand
}

func newZipf(n int, s float64, seed uint64) *zipf {
	z := &zipf{cum: make([]float64, n), r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	total := 0.0
	for i := range z.cum {
		total += 1 / math.Pow(float64(i+1), s)
		z.cum[i] = total
	}
	return z
}

func (z *zipf) next() int {
	u := z.r.Float64() * z.cum[len(z.cum)-1]
	return sort.SearchFloat64s(z.cum, u)
}

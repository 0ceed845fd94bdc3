// Command otter sets strata's memory tier (memory.Cache) beside
// github.com/maypok86/otter/v2 and prints hit ratios on Zipf and Zipf+scan
// traces and parallel Get throughput. It is a module of its own so that
// otter never becomes a dependency of strata.
//
// Capacity is equalised by entry count: every entry has a 16-byte key and a
// 100-byte value; otter gets MaximumSize = N, strata gets N times the bytes
// it charges for one such entry (key, value, block rounding and its
// per-entry overhead), so both can hold N entries.
//
//	go run . [-keys 100000] [-requests 1000000] [-benchtime 1s]
package main

import (
	"fmt"
	"time"

	"strata/hybrid/memory"

	"github.com/maypok86/otter/v2"
)

const valueSize = 100

// key returns the 16-byte key of id.
func key(dst []byte, id int) []byte {
	return fmt.Appendf(dst[:0], "k%015d", id)
}

// cache is what the hit-ratio simulation needs of either side.
type cache interface {
	get(k []byte) bool
	set(k, v []byte)
	len() int
}

type strataCache struct{ m *memory.Cache }

func (c strataCache) get(k []byte) bool { _, _, ok := c.m.Get(k, nil); return ok }
func (c strataCache) set(k, v []byte)   { c.m.Set(k, v, time.Time{}) }
func (c strataCache) len() int          { return c.m.Len() }

type otterCache struct{ c *otter.Cache[string, []byte] }

func (c otterCache) get(k []byte) bool { _, ok := c.c.GetIfPresent(string(k)); return ok }
func (c otterCache) set(k, v []byte)   { c.c.Set(string(k), v) }
func (c otterCache) len() int          { return c.c.EstimatedSize() }

// entryCharge returns the bytes memory.Cache charges for one entry.
func entryCharge() int64 {
	m, err := memory.New(memory.Options{Capacity: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.Set(key(nil, 0), make([]byte, valueSize), time.Time{})
	return m.Bytes()
}

func newStrata(entries int, p memory.Policy) strataCache {
	m, err := memory.New(memory.Options{Capacity: int64(entries) * entryCharge(), Policy: p})
	if err != nil {
		panic(err)
	}
	return strataCache{m}
}

func newOtter(entries int) otterCache {
	return otterCache{otter.Must(&otter.Options[string, []byte]{MaximumSize: entries})}
}

// trace returns request ids: Zipf(s) over [0, keys), and with scan > 0, a
// scan of scan fresh keys (ids ≥ keys, each requested once) after every
// 5×scan Zipf requests.
func trace(keys, requests int, s float64, scan int) []int {
	return traceSeed(keys, requests, s, scan, 42)
}

// traceSeed is trace with the Zipf generator's seed.
func traceSeed(keys, requests int, s float64, scan int, seed uint64) []int {
	z := newZipf(keys, s, seed)
	out := make([]int, 0, requests)
	fresh := keys
	for len(out) < requests {
		for i := 0; i < 5*scan || scan == 0; i++ {
			if len(out) == requests {
				return out
			}
			out = append(out, z.next())
		}
		for i := 0; i < scan && len(out) < requests; i++ {
			out = append(out, fresh)
			fresh++
		}
	}
	return out
}

// hitRatio replays t through c, setting on every miss.
func hitRatio(c cache, t []int) float64 {
	var k []byte
	v := make([]byte, valueSize)
	hits := 0
	for _, id := range t {
		k = key(k, id)
		if c.get(k) {
			hits++
		} else {
			c.set(k, v)
		}
	}
	return float64(hits) / float64(len(t))
}

func ratio(a, b float64) string { return fmt.Sprintf("%.3f", a/b) }

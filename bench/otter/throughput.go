package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

// getWorkload is a filled cache pair and a Zipf sequence of ids to read.
type getWorkload struct {
	keys  [][]byte
	skeys []string
	ids   []int
	s     strataCache
	o     otterCache
}

// newGetWorkload fills both caches with the same keys, all of which fit.
func newGetWorkload(keys int) *getWorkload {
	w := &getWorkload{keys: make([][]byte, keys), skeys: make([]string, keys),
		s: newStrata(keys*11/10, ""), o: newOtter(keys * 11 / 10)}
	v := make([]byte, valueSize)
	for i := range w.keys {
		w.keys[i] = key(nil, i)
		w.skeys[i] = string(w.keys[i])
		w.s.m.Set(w.keys[i], v, time.Time{})
		w.o.c.Set(w.skeys[i], v)
	}
	z := newZipf(keys, 0.9, 7)
	w.ids = make([]int, 1<<20)
	for i := range w.ids {
		w.ids[i] = z.next()
	}
	return w
}

// strataGet reads with b.RunParallel; each value is copied into the
// goroutine's buffer (strata's API), otter hands out its stored slice.
func (w *getWorkload) strataGet(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, 0, valueSize)
		i := rand.IntN(len(w.ids))
		for pb.Next() {
			i = (i + 1) & (len(w.ids) - 1)
			if _, _, ok := w.s.m.Get(w.keys[w.ids[i]], dst); !ok {
				b.Error("strata: miss on a filled cache")
				return
			}
		}
	})
}

func (w *getWorkload) otterGet(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(w.ids))
		for pb.Next() {
			i = (i + 1) & (len(w.ids) - 1)
			if _, ok := w.o.c.GetIfPresent(w.skeys[w.ids[i]]); !ok {
				b.Error("otter: miss on a filled cache")
				return
			}
		}
	})
}

package main

import "testing"

// BenchmarkGetSerial is one goroutine's hit loop, for instruction and cache
// miss counts under valgrind, which are steady on a loaded machine where
// wall time is not. Run it at two fixed counts and subtract to drop the
// fill:
//
//	go test -c -o /tmp/otterbench .
//	valgrind --tool=cachegrind --cache-sim=yes /tmp/otterbench \
//	    -test.run '^$' -test.bench 'GetSerial/strata' -test.benchtime 1000000x
func BenchmarkGetSerial(b *testing.B) {
	w := sharedWorkload()
	b.Run("strata", func(b *testing.B) {
		dst := make([]byte, 0, valueSize)
		i := 0
		for b.Loop() {
			i = (i + 1) & (len(w.ids) - 1)
			if _, _, ok := w.s.m.Get(w.keys[w.ids[i]], dst); !ok {
				b.Fatal("strata: miss on a filled cache")
			}
		}
	})
	b.Run("otter", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i = (i + 1) & (len(w.ids) - 1)
			if _, ok := w.o.c.GetIfPresent(w.skeys[w.ids[i]]); !ok {
				b.Fatal("otter: miss on a filled cache")
			}
		}
	})
}

package main

import (
	"sync"
	"testing"
	"time"
)

// TestEpochs runs workers that record one insert per loop turn and checks
// that every turn is counted in exactly one epoch, across several ends and
// the final stop, and that each worker stops.
func TestEpochs(t *testing.T) {
	const workers = 4
	col := newCollector(workers)
	var wg sync.WaitGroup
	turns := make([]uint64, workers)
	for i := range workers {
		r := newRecorder(col.cur)
		wg.Go(func() {
			for !r.poll() {
				r.p.inserts++
				recordMicros(r.p.insertLat, time.Microsecond)
				turns[i]++
			}
		})
	}
	var sum uint64
	for range 5 {
		p := col.end(false)
		if p.insertLat.TotalCount() != int64(p.inserts) {
			t.Fatalf("histogram %d, count %d", p.insertLat.TotalCount(), p.inserts)
		}
		sum += p.inserts
	}
	sum += col.end(true).inserts
	wg.Wait()
	var want uint64
	for _, n := range turns {
		want += n
	}
	if sum != want {
		t.Fatalf("epochs counted %d turns, workers made %d", sum, want)
	}
}

// TestRecorderSleepWakesOnEpochEnd: a worker pacing itself for an hour
// still hands its part over when the epoch ends.
func TestRecorderSleepWakesOnEpochEnd(t *testing.T) {
	col := newCollector(1)
	r := newRecorder(col.cur)
	done := make(chan struct{})
	counted := make(chan struct{})
	go func() {
		defer close(done)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for !r.poll() {
			r.p.gets++
			counted <- struct{}{}
			r.sleep(timer, time.Hour)
		}
	}()
	for i, stop := range []bool{false, true} {
		<-counted
		if p := col.end(stop); p.gets != 1 {
			t.Fatalf("epoch %d: %d gets, want 1", i, p.gets)
		}
	}
	<-done
}

func TestPartAdd(t *testing.T) {
	a, b := newPart(), newPart()
	a.inserts, a.gets, a.misses, a.corrupt = 1, 2, 1, 0
	b.inserts, b.insertBytes, b.gets, b.hitByte, b.errors, b.corrupt = 3, 10, 4, 7, 1, 2
	recordMicros(a.hitLat, 5*time.Microsecond)
	recordMicros(b.hitLat, 9*time.Microsecond)
	recordMicros(b.missLat, 9*time.Microsecond)
	a.add(b)
	if a.inserts != 4 || a.insertBytes != 10 || a.gets != 6 || a.misses != 1 || a.hitByte != 7 ||
		a.errors != 1 || a.corrupt != 2 || a.hitLat.TotalCount() != 2 || a.missLat.TotalCount() != 1 || a.hitLat.Max() != 9 {
		t.Fatalf("%+v", a)
	}
}

// TestHotPathAllocatesNothing: what a worker does around each operation
// (poll, time, record, build or check a value, pace) allocates nothing,
// so the bench adds no GC work of its own to the cache's.
func TestHotPathAllocatesNothing(t *testing.T) {
	col := newCollector(1)
	r := newRecorder(col.cur)
	w := testWorkload(1, 4096, 1, "uniform")
	buf := make([]byte, 0, 4096+8)
	p := pacer{rate: 1 << 20}
	allocs := testing.AllocsPerRun(1000, func() {
		r.poll()
		start := w.now()
		buf = w.value(buf[:0], 42, 4000)
		if !w.valid(buf, 42) {
			t.Fatal("invalid")
		}
		recordMicros(r.p.insertLat, w.now()-start)
		p.spend(len(buf))
		p.wait(w.now())
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per operation", allocs)
	}
}

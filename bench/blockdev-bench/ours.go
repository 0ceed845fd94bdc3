package main

import (
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"strata/blockdev"
)

// runOurs runs case c on dev for d: c.jobs goroutines, each with its own
// pooled buffer, random source and histogram, doing what fio's jobs do:
// sequential writes wrapping at the end of the device, or reads at
// uniformly random bs-aligned offsets. Throughput is bytes over the wall
// time from start until the last goroutine stopped.
func runOurs(dev blockdev.Device, pool *blockdev.Pool, c benchCase, d time.Duration) (result, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total hist
		first error
	)
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(d)
	for j := range c.jobs {
		wg.Go(func() {
			h := new(hist)
			err := ourJob(dev, pool, c, uint64(j), deadline, h)
			mu.Lock()
			defer mu.Unlock()
			total.merge(h)
			if first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	bytes := total.n * uint64(c.bs)
	return result{
		cpuPerOp: float64(cpuTime()-cpu0) / float64(max(total.n, 1)),
		bw:       float64(bytes) / elapsed,
		iops:     float64(total.n) / elapsed,
		mean:     total.mean(),
		p50:      total.quantile(0.5),
		bytes:    bytes,
	}, first
}

// cpuTime is the user+system CPU time of this process so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// monoBase anchors mono: time.Since reads one clock where time.Now reads
// two, and this loop reads it once per I/O.
var monoBase = time.Now()

func mono() int64 { return int64(time.Since(monoBase)) }

func ourJob(dev blockdev.Device, pool *blockdev.Pool, c benchCase, seed uint64, deadline time.Time, h *hist) error {
	buf := pool.Acquire(c.bs)
	defer pool.Release(buf)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	blocks := dev.Size() / int64(c.bs)
	var next int64
	end := int64(deadline.Sub(monoBase))
	for now := mono(); now < end; {
		var off int64
		if c.write {
			off, next = next*int64(c.bs), (next+1)%blocks
		} else {
			off = rng.Int64N(blocks) * int64(c.bs)
		}
		var err error
		if c.write {
			_, err = dev.WriteAt(buf.B, off)
		} else {
			_, err = dev.ReadAt(buf.B, off)
		}
		if err != nil {
			return err
		}
		t := mono()
		h.record(t - now)
		now = t
	}
	return nil
}

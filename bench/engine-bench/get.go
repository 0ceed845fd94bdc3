package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"strata/bench/internal/fio"
	"strata/hybrid/disk"
)

// benchGet fills the engine with entries of 4 and 64 KiB (key + value +
// header ≈ the size) and compares disk-hit Get latency with fio random
// reads of the same size at the same concurrency.
func benchGet(ctx context.Context, cfg *config, path string) ([]row, error) {
	var rows []row
	for _, size := range []int{4 << 10, 64 << 10} {
		dev, err := openDev(path, cfg.size)
		if err != nil {
			return nil, err
		}
		e, err := disk.Open(dev, disk.Options{
			RegionSize: 16 << 20, BufferSize: 4 << 20, Recovery: disk.RecoveryNone,
			Runtime: disk.RuntimeMode(cfg.runtime), ReadWorkers: 16, Logger: quiet,
		})
		if err != nil {
			dev.Close()
			return nil, err
		}
		n := fill(e, size, cfg.size*6/10)
		base := runtime.GOMAXPROCS(0)
		for _, readers := range []int{1, 8} {
			procs := []int{base}
			if readers+2 > base {
				procs = append(procs, readers+2)
			}
			for _, p := range procs {
				r, err := getCase(ctx, cfg, path, e, size, n, readers, p)
				if err != nil {
					e.Close(context.Background())
					dev.Close()
					return nil, err
				}
				rows = append(rows, r)
			}
		}
		if err := e.Close(context.Background()); err != nil {
			return nil, err
		}
		dev.Close()
	}
	return rows, nil
}

// fill inserts entries of about size bytes (header included) until bytes
// are written, waits until all are on the device and returns their count.
func fill(e *disk.Engine, size int, bytes int64) int {
	val := make([]byte, size-64)
	n := 0
	for ; int64(n)*int64(size) < bytes; n++ {
		for !e.Insert(getKey(n), val, time.Time{}) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	settle(e)
	return n
}

func getKey(i int) []byte { return strconv.AppendInt([]byte("g"), int64(i), 10) }

// settle waits until nothing is queued or pending.
func settle(e *disk.Engine) {
	for {
		if s := e.Stats(); s.QueuedBytes == 0 && s.PendingKeys == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// getCase runs rounds of fio randread and of our Gets at GOMAXPROCS p.
func getCase(ctx context.Context, cfg *config, path string, e *disk.Engine, size, n, readers, p int) (row, error) {
	var fp50, op50, fmean, omean []float64
	for range cfg.rounds {
		f, err := fio.Run(ctx, cfg.fio, path, cfg.size, fio.Job{RW: "randread", BS: size, Jobs: readers, D: cfg.d})
		if err != nil {
			return row{}, err
		}
		prev := runtime.GOMAXPROCS(p)
		p50, mean, hits := getOurs(e, n, readers, cfg.d)
		runtime.GOMAXPROCS(prev)
		if hits < 0.99 {
			return row{}, fmt.Errorf("hit ratio %.3f: the filled entries are not all on disk", hits)
		}
		fp50, fmean, op50, omean = append(fp50, f.P50), append(fmean, f.Mean), append(op50, p50), append(omean, mean)
	}
	f, o := median(fp50), median(op50)
	return row{
		name: fmt.Sprintf("get %dK x%d P=%d %.3s", size>>10, readers, p, cfg.runtime), unit: "p50 µs",
		fio: f / 1e3, ours: o / 1e3, ratio: o / f, target: "≤ 1.5", ok: o <= 1.5*f,
		comment: fmt.Sprintf("mean fio %.0f ours %.0f µs; %d entries", median(fmean)/1e3, median(omean)/1e3, n),
	}, nil
}

// getOurs times Gets of random filled keys from readers goroutines for d;
// it returns the median and mean latency in ns and the hit ratio.
func getOurs(e *disk.Engine, n, readers int, d time.Duration) (p50, mean, hits float64) {
	lats := make([][]int64, readers)
	hit := make([]int, readers)
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for g := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			dst := make([]byte, 0, 128<<10)
			l := make([]int64, 0, 1<<16)
			key := make([]byte, 0, 16)
			for i := 0; ; i++ {
				if i%64 == 0 && time.Now().After(deadline) {
					break
				}
				key = strconv.AppendInt(append(key[:0], 'g'), int64(rng.IntN(n)), 10)
				t := time.Now()
				var ok bool
				dst, ok = e.Get(key, dst[:0])
				l = append(l, int64(time.Since(t)))
				if ok {
					hit[g]++
				}
			}
			lats[g] = l
		}()
	}
	wg.Wait()
	var all []int64
	h := 0
	for g := range readers {
		all = append(all, lats[g]...)
		h += hit[g]
	}
	slices.Sort(all)
	var sum float64
	for _, v := range all {
		sum += float64(v)
	}
	return float64(all[len(all)/2]), sum / float64(len(all)), float64(h) / float64(len(all))
}

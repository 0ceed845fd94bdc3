package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"strata/bench/internal/fio"
	"strata/hybrid/disk"
)

// benchRecover fills a cfg.recSize file with 16 KiB entries through the
// engine, then times disk.Open (quiet recovery) with the page cache
// dropped before each round, beside fio's sequential read rate of the
// same file (and what reading all of it would take at that rate).
func benchRecover(ctx context.Context, cfg *config, path string) ([]row, error) {
	o := disk.Options{RegionSize: 16 << 20, BufferSize: 4 << 20, Flushers: 2,
		QueueBytes: 64 << 20, Recovery: disk.RecoveryNone, Logger: quiet}
	dev, err := openDev(path, cfg.recSize)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	e, err := disk.Open(dev, o)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	val := make([]byte, 16<<10-64)
	for i := 0; i%256 != 0 || e.Stats().BytesWritten < uint64(cfg.recSize-(64<<20)); i++ {
		for !e.Insert(strconv.AppendInt([]byte("r"), int64(i), 10), val, time.Time{}) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	if err := e.Close(context.Background()); err != nil {
		return nil, err
	}
	fmt.Printf("recover: filled %d MiB in %v\n", cfg.recSize>>20, time.Since(start).Round(time.Millisecond))
	o.Recovery = disk.RecoveryQuiet
	var secs, fios []float64
	var entries uint64
	dropped := true
	for range cfg.rounds {
		dropped = dropCaches() && dropped
		t := time.Now()
		e, err := disk.Open(dev, o)
		if err != nil {
			return nil, err
		}
		secs = append(secs, time.Since(t).Seconds())
		entries = e.Stats().Recovered
		if err := e.Close(context.Background()); err != nil {
			return nil, err
		}
		f, err := fio.Run(ctx, cfg.fio, path, cfg.recSize, fio.Job{RW: "read", BS: 4 << 20, Jobs: 1, D: cfg.d})
		if err != nil {
			return nil, err
		}
		fios = append(fios, f.BW)
	}
	s, bw := median(secs), median(fios)
	full := float64(cfg.recSize) / bw
	return []row{{
		name: fmt.Sprintf("recover %dG of 16K entries", cfg.recSize>>30), unit: "s", fio: full, ours: s, ratio: s / full,
		target: "< 5 s", ok: s < 5,
		comment: fmt.Sprintf("fio: seq read %.0f MiB/s, column = time to read it all; %d entries; caches dropped: %v",
			mib(bw), entries, dropped),
	}}, nil
}

// dropCaches syncs and drops the page cache (root only); false if it
// could not.
func dropCaches() bool {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0) == nil
}

// benchRAM inserts cfg.entries small entries (9-byte keys, 8-byte
// values), then reports the index's bytes per entry, the Go heap growth
// per entry, and the cost of a full GC in the steady state (after three
// cycles have freed the insert burst's garbage): the stop-the-world pauses
// and the wall time of runtime.GC, median of rounds.
func benchRAM(_ context.Context, cfg *config, path string) ([]row, error) {
	n := cfg.entries
	size := max(int64(n)*160, 256<<20) // entries are 104 device bytes with their records
	size = (size + 16<<20 - 1) / (16 << 20) * (16 << 20)
	dev, err := openDev(path, size+2*4096+32<<20)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	e, err := disk.Open(dev, disk.Options{Recovery: disk.RecoveryNone, QueueBytes: 64 << 20, Logger: quiet})
	if err != nil {
		return nil, err
	}
	defer e.Close(context.Background())
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			val := []byte("12345678")
			key := make([]byte, 0, 16)
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				key = strconv.AppendInt(append(key[:0], 'k'), 10_000_000+i, 10)
				for !e.Insert(key, val, time.Time{}) {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
	settle(e)
	st := e.Stats()
	fmt.Printf("ram: %d entries inserted in %v (%d drops)\n", st.Entries, time.Since(start).Round(time.Millisecond), st.DropQueue)
	for range 3 { // let the first cycles free the insert burst's garbage and empty sync.Pools
		runtime.GC()
	}
	var pauses, walls []float64
	for range max(cfg.rounds, 3) {
		t := time.Now()
		runtime.GC()
		walls = append(walls, float64(time.Since(t)))
		var gs debug.GCStats
		debug.ReadGCStats(&gs)
		pauses = append(pauses, float64(gs.Pause[0]))
	}
	runtime.ReadMemStats(&m1)
	if cfg.memprof != "" {
		if f, err := os.Create(cfg.memprof); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	per := float64(st.IndexBytes) / float64(st.Entries)
	heap := (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(st.Entries)
	p, w := median(pauses), median(walls)
	return []row{
		{name: fmt.Sprintf("index RAM, %dM entries", n/1_000_000), unit: "B/entry", ours: per, ratio: per / 24,
			target: "≤ 24 B", ok: per <= 24, comment: fmt.Sprintf("Go heap growth %.1f B/entry (buffers, pools included)", heap)},
		{name: "full GC, STW pauses", unit: "ms", ours: p / 1e6, ratio: p / 5e6, target: "< 5 ms", ok: p < 5e6,
			comment: fmt.Sprintf("runtime.GC wall time %.2f ms (concurrent mark included)", w/1e6)},
	}, nil
}

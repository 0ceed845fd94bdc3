package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"strata/admission"
	"strata/bench/internal/fio"
	"strata/blockdev"
	"strata/hybrid/disk"
)

// limiter adapts an admission.RateLimiter to the engine's Admitter.
type limiter struct{ l *admission.RateLimiter }

func (a limiter) Admit(h uint64, n int) bool { return a.l.Admit(h, n).OK() }
func (a limiter) Written(n int)              { a.l.Charge(n) }

// writeOpts is the engine configuration of the write and rate cases: large
// buffers, several flushers (each has one write in flight while its other
// buffer fills), a queue of a few buffers per flusher.
func writeOpts(cfg *config, adm disk.Admitter) disk.Options {
	return disk.Options{
		RegionSize: 64 << 20, BufferSize: cfg.buffer, Flushers: cfg.flushers,
		QueueBytes: int64(cfg.flushers) * 4 * int64(cfg.buffer), Recovery: disk.RecoveryNone,
		Admission: adm, Logger: quiet,
	}
}

// produce inserts entries of n bytes (key + value) from g goroutines until
// stop is set, with unique keys; a refused Insert backs off for a moment.
func produce(e *disk.Engine, g, n int, stop *atomic.Bool, next *atomic.Uint64) *sync.WaitGroup {
	var wg sync.WaitGroup
	val := make([]byte, n-16)
	for i := range val {
		val[i] = byte(i*131 + 7)
	}
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := make([]byte, 0, 16)
			for !stop.Load() {
				key = strconv.AppendUint(append(key[:0], 'k'), next.Add(1), 10)
				if !e.Insert(key, val, time.Time{}) {
					time.Sleep(20 * time.Microsecond)
				}
			}
		}()
	}
	return &wg
}

// writeOurs runs the engine on path for d with an admitter and returns the
// device write rate over the last 4/5 of d (the first fifth warms up the
// queue, the regions and a limiter's burst) and the payload rate.
func writeOurs(cfg *config, path string, adm disk.Admitter) (devRate, payloadRate float64, err error) {
	dev, err := openDev(path, cfg.size)
	if err != nil {
		return 0, 0, err
	}
	defer dev.Close()
	e, err := disk.Open(dev, writeOpts(cfg, adm))
	if err != nil {
		return 0, 0, err
	}
	var stop atomic.Bool
	var next atomic.Uint64
	wg := produce(e, 2, cfg.entry, &stop, &next)
	time.Sleep(cfg.d / 5)
	s0, p0, t0 := dev.Stats(), e.Stats(), time.Now()
	time.Sleep(cfg.d - cfg.d/5)
	s1, p1, el := dev.Stats(), e.Stats(), time.Since(t0).Seconds()
	stop.Store(true)
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		return 0, 0, err
	}
	if os.Getenv("ENGINE_BENCH_DEBUG") != "" {
		fmt.Printf("debug: inserts %d, queue drops %d, admission drops %d, batches %d, dev writes %d (%.1f MiB avg), write time %.2fs of %.2fs\n",
			p1.Inserts-p0.Inserts, p1.DropQueue-p0.DropQueue, p1.DropAdmission-p0.DropAdmission, p1.Batches-p0.Batches,
			s1.Writes-s0.Writes, mib(float64(s1.WriteBytes-s0.WriteBytes)/float64(max(s1.Writes-s0.Writes, 1))),
			float64(s1.WriteNanos-s0.WriteNanos)/1e9, el)
	}
	return float64(s1.WriteBytes-s0.WriteBytes) / el, float64(p1.PayloadWritten-p0.PayloadWritten) / el, nil
}

// benchWrite compares the engine's device write rate, admission not
// limiting, with fio writing blocks of one flush buffer sequentially.
func benchWrite(ctx context.Context, cfg *config, path string) (row, float64, error) {
	if err := prepare(path, cfg.size); err != nil {
		return row{}, 0, err
	}
	var fios, ours, pay []float64
	for range cfg.rounds {
		f, err := fio.Run(ctx, cfg.fio, path, cfg.size, fio.Job{RW: "write", BS: cfg.buffer, Jobs: 1, D: cfg.d})
		if err != nil {
			return row{}, 0, err
		}
		o, p, err := writeOurs(cfg, path, nil)
		if err != nil {
			return row{}, 0, err
		}
		fios, ours, pay = append(fios, f.BW), append(ours, o), append(pay, p)
	}
	f, o := median(fios), median(ours)
	return row{
		name: fmt.Sprintf("write %dK entries", cfg.entry>>10), unit: "MiB/s", fio: mib(f), ours: mib(o), ratio: o / f,
		target: "≥ 0.90", ok: o >= 0.9*f,
		comment: fmt.Sprintf("fio bs=%dM x1; ours %d flushers x2 bufs of %dM; payload %.0f MiB/s",
			cfg.buffer>>20, cfg.flushers, cfg.buffer>>20, mib(median(pay))),
	}, f, nil
}

// benchRate sets a rate limit of cfg.rate × base and compares the device
// write rate with it.
func benchRate(_ context.Context, cfg *config, path string, base float64) (row, error) {
	limit := int64(cfg.rate * base)
	var ours []float64
	for range cfg.rounds {
		l, err := admission.NewRateLimiter(admission.RateOptions{BytesPerSecond: limit, BurstBytes: limit / 4})
		if err != nil {
			return row{}, err
		}
		o, _, err := writeOurs(cfg, path, limiter{l})
		if err != nil {
			return row{}, err
		}
		ours = append(ours, o)
	}
	o := median(ours)
	r := o / float64(limit)
	return row{
		name: "write under rate limit", unit: "MiB/s", ours: mib(o), ratio: r, target: "1 ± 0.05",
		ok: r >= 0.95 && r <= 1.05, comment: fmt.Sprintf("limit %.0f MiB/s (%.2f × min(fio, ours)), burst limit/4", mib(float64(limit)), cfg.rate),
	}, nil
}

// prepare creates path with size bytes, written once so fio and the
// engine meet allocated extents.
func prepare(path string, size int64) error {
	dev, err := openDev(path, size)
	if err != nil {
		return err
	}
	defer dev.Close()
	b := blockdev.AlignedBuffer(16<<20, dev.BlockSize())
	for off := int64(0); off < size; off += int64(len(b)) {
		if _, err := dev.WriteAt(b[:min(int64(len(b)), size-off)], off); err != nil {
			return err
		}
	}
	return dev.Sync()
}

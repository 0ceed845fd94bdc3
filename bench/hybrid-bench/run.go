package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"time"

	"strata/admission"
	"strata/blockdev"
	"strata/hybrid"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// result is everything a run measured; --json writes it.
type result struct {
	Config       *config      `json:"config"`
	Intervals    []Figures    `json:"intervals"`
	Total        Figures      `json:"total"`
	CloseSeconds float64      `json:"close_seconds"`
	RSS          rssReport    `json:"rss"`
	Noise        Noise        `json:"noise"`
	Cache        hybrid.Stats `json:"cache"`
}

// bench is one run in progress.
type bench struct {
	cfg   *config
	out   io.Writer
	cache *hybrid.Cache
	disk  bool // false: memory only
	col   *collector
	prog  *progress
	wl    *workload
	res   *result

	maxEntries int // most disk index entries seen at a report
}

// run opens the cache, drives the workload and reports. tty turns on the
// progress line.
func run(cfg *config, out io.Writer, tty bool) (*result, error) {
	opts, err := cacheOptions(cfg)
	if err != nil {
		return nil, err
	}
	c, err := hybrid.Open(opts)
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, out: out, cache: c, disk: opts.Device != nil || len(opts.Devices) > 0, res: &result{Config: cfg}}
	b.res.RSS.FlushBuffers = flushBufferBytes(opts)
	printConfig(out, cfg, opts)
	stopMetrics, err := startMetrics(cfg, c, out)
	if err != nil {
		_ = c.Close(context.Background())
		return nil, err
	}
	err = b.drive(tty)
	stopMetrics() // before Close: a scrape reads the cache's Stats
	if err != nil {
		_ = c.Close(context.Background())
		return nil, err
	}
	return b.res, b.finish()
}

// drive runs warm-up and measurement with every worker, under the CPU
// profile if asked for.
func (b *bench) drive(tty bool) error {
	if b.cfg.CPUProfile != "" {
		f, err := os.Create(b.cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("hybrid-bench: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("hybrid-bench: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	n := b.cfg.Writers + b.cfg.Readers
	b.col = newCollector(n)
	b.wl = newWorkload(b.cache, b.cfg)
	b.prog = newProgress(b.out, tty, b.devStats)
	var wg sync.WaitGroup
	for i := range b.cfg.Writers {
		wg.Go(func() { b.wl.writer(i, newRecorder(b.col.cur)) })
	}
	for i := range b.cfg.Readers {
		wg.Go(func() { b.wl.readerLoop(i, newRecorder(b.col.cur)) })
	}
	b.warmUp(ctx)
	stopTrace, err := b.startTrace()
	if err != nil {
		b.col.end(true)
		wg.Wait()
		return err
	}
	b.measure(ctx)
	stopTrace()
	wg.Wait()
	return b.writeMemProfile()
}

// startTrace starts the execution trace if --trace; the returned func
// stops it. go tool trace -pprof=sync|sched shows where operations wait.
func (b *bench) startTrace() (stop func(), err error) {
	if b.cfg.Trace == "" {
		return func() {}, nil
	}
	f, err := os.Create(b.cfg.Trace)
	if err != nil {
		return nil, fmt.Errorf("hybrid-bench: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("hybrid-bench: %w", err)
	}
	return func() { trace.Stop(); f.Close() }, nil
}

// writeMemProfile writes the heap profile if --memprofile: its
// alloc_space view shows what the run allocated, the GC's work.
func (b *bench) writeMemProfile() error {
	if b.cfg.MemProfile == "" {
		return nil
	}
	f, err := os.Create(b.cfg.MemProfile)
	if err != nil {
		return fmt.Errorf("hybrid-bench: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("hybrid-bench: %w", err)
	}
	return nil
}

// warmUp runs the workload for --warm-up seconds and throws its figures
// away.
func (b *bench) warmUp(ctx context.Context) {
	if b.cfg.WarmUp == 0 {
		return
	}
	start := b.wl.now()
	end := start + time.Duration(b.cfg.WarmUp)*time.Second
	b.waitUntil(ctx, end, func(now time.Duration) string {
		return fmt.Sprintf("warm up... [%ds/%ds]", int((now-start)/time.Second), b.cfg.WarmUp)
	})
	b.col.end(false)
}

// measure runs --time seconds, printing a block per --report-interval,
// and fills b.res's intervals and total. An interrupt ends it early.
func (b *bench) measure(ctx context.Context) {
	start := b.wl.now()
	dev0, noise0 := b.devStats(), takeNoise()
	end := start + time.Duration(b.cfg.Time)*time.Second
	every := time.Duration(b.cfg.ReportInterval) * time.Second
	total := newPart()
	prevT, prevDev := start, dev0
	for next := start + every; ; next += every {
		at := min(next, end)
		b.waitUntil(ctx, at, func(now time.Duration) string {
			return fmt.Sprintf("running... [%ds/%ds]", int((now-start)/time.Second), b.cfg.Time)
		})
		t1, dev1 := b.wl.now(), b.devStats()
		stop := at == end || ctx.Err() != nil
		p := b.col.end(stop)
		f := analyse(t1-prevT, p, prevDev, dev1)
		b.prog.clear()
		if at == next && ctx.Err() == nil {
			printInterval(b.out, int((t1-start+time.Second/2)/time.Second), b.cfg.Time, &f)
		}
		b.res.Intervals = append(b.res.Intervals, f)
		total.add(p)
		b.noteEntries()
		prevT, prevDev = t1, dev1
		if stop {
			break
		}
	}
	b.res.Total = analyse(prevT-start, total, dev0, prevDev)
	b.res.Noise = noiseBetween(noise0, takeNoise())
}

// waitUntil sleeps until monotonic time at (or an interrupt), refreshing
// the progress line every second.
func (b *bench) waitUntil(ctx context.Context, at time.Duration, status func(time.Duration) string) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := b.wl.now()
		if now >= at {
			return
		}
		b.prog.show(now, status(now))
		t.Reset(min(at-now, time.Second))
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// devStats is the devices' I/O counters, summed over them.
func (b *bench) devStats() blockdev.Stats {
	if !b.disk {
		return blockdev.Stats{}
	}
	return b.cache.Stats().Device
}

func (b *bench) noteEntries() {
	if s := b.cache.Stats(); s.Disk.Entries > b.maxEntries {
		b.maxEntries = s.Disk.Entries
	}
}

// finish closes the cache and prints and writes the totals.
func (b *bench) finish() error {
	b.res.Cache = b.cache.Stats()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	err := b.cache.Close(ctx)
	took := time.Since(t0)
	b.res.CloseSeconds = took.Seconds()
	printTotal(b.out, &b.res.Total, took)
	b.res.RSS.fill(b.cfg.Mem, b.maxEntries)
	b.res.RSS.print(b.out, b.cfg.Mem)
	b.res.Noise.print(b.out, time.Duration(b.res.Total.Seconds*1e9))
	if t := b.res.Total; t.Corrupt > 0 || t.Errors > 0 {
		fmt.Fprintf(b.out, "WRONG: %d hits returned other bytes than stored; %d GetOrFetch errors\n", t.Corrupt, t.Errors)
		err = joinErr(err, fmt.Errorf("hybrid-bench: %d corrupt hits, %d errors", t.Corrupt, t.Errors))
	}
	if b.cfg.JSON != "" {
		err = joinErr(err, writeJSON(b.cfg.JSON, b.res))
	}
	return err
}

func joinErr(a, b error) error {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return fmt.Errorf("%w; %w", a, b)
}

func writeJSON(path string, r *result) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("hybrid-bench: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("hybrid-bench: %w", err)
	}
	return nil
}

// cacheOptions builds the Cache's options from the flags, opening the
// device (which the Cache then owns).
func cacheOptions(cfg *config) (hybrid.Options, error) {
	o := hybrid.Options{
		Memory:      memory.Options{Capacity: cfg.Mem, Policy: memory.Policy(cfg.Eviction)},
		WritePolicy: hybrid.WritePolicy(cfg.Policy),
	}
	if cfg.NoDisk {
		return o, nil
	}
	o.Disk = disk.Options{
		RegionSize: cfg.RegionSize, BufferSize: int(cfg.BufferSize), QueueBytes: cfg.QueueBytes,
		Flushers: cfg.Flushers, Reclaimers: cfg.Reclaimers,
		Runtime:     disk.RuntimeMode(cfg.Runtime),
		ReadWorkers: cfg.ReadWorkers, WriteWorkers: cfg.WriteWorkers,
		Recovery: disk.RecoveryMode(cfg.RecoverMode),
	}
	if cfg.AdmissionRate > 0 {
		l, err := admission.NewRateLimiter(admission.RateOptions{BytesPerSecond: cfg.AdmissionRate})
		if err != nil {
			return o, err
		}
		o.Admission = l
	}
	for _, f := range strings.Split(cfg.File, ",") {
		dev, err := blockdev.Open(f, blockdev.Options{Size: cfg.Disk})
		if err != nil {
			for _, d := range o.Devices {
				d.Close()
			}
			return o, err
		}
		o.Devices = append(o.Devices, dev)
	}
	return o, nil
}

// flushBufferBytes is devices × Flushers × 2 × BufferSize after the
// engine's defaults: the write path's fixed memory.
func flushBufferBytes(o hybrid.Options) int64 {
	if len(o.Devices) == 0 {
		return 0
	}
	d := o.Disk
	d.EnsureDefaults()
	return int64(len(o.Devices)) * int64(d.Flushers) * 2 * int64(d.BufferSize)
}

func printConfig(w io.Writer, cfg *config, o hybrid.Options) {
	dev := "none"
	if len(o.Devices) > 0 {
		dev = fmt.Sprintf("%s (%d × %s, direct I/O %v)", cfg.File, len(o.Devices), iec(uint64(o.Devices[0].Size())), blockdev.IsDirect(o.Devices[0]))
	}
	fmt.Fprintf(w, "hybrid-bench: device %s; mem %s, %s; region %s; runtime %s; flushers %d, reclaimers %d\n",
		dev, iec(uint64(cfg.Mem)), cfg.Eviction, iec(uint64(cfg.RegionSize)), cfg.Runtime, cfg.Flushers, cfg.Reclaimers)
	fmt.Fprintf(w, "hybrid-bench: %d writers at %s/s, %d readers at %s/s, entries %s..%s, get range %d (%s), admission %s/s, latency %v; %ds + %ds warm-up\n",
		cfg.Writers, iec(uint64(cfg.WRate)), cfg.Readers, iec(uint64(cfg.RRate)), iec(uint64(cfg.EntryMin)),
		iec(uint64(cfg.EntryMax)), cfg.GetRange, cfg.Distribution, iec(uint64(cfg.AdmissionRate)), cfg.Latency,
		cfg.Time, cfg.WarmUp)
}

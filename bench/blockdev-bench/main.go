// Command blockdev-bench measures strata's blockdev against fio on the same
// file in the same run: sequential aligned writes (1 and 16 MiB) and random
// aligned reads (4 and 64 KiB at 1, 8 and 32 concurrent readers), fio with
// --direct=1 --ioengine=psync (pread/pwrite, as ours) and numjobs equal to
// our goroutine count. It prints both figures and ours/fio per case.
//
//	blockdev-bench -file /var/tmp/x/dev -size 1GiB -time 5s
//
// The file is created (preallocated), filled once so reads hit real
// extents, and removed at the end unless -keep. Within a case the two
// sides run one after the other, in alternating order from case to case.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"strata/blockdev"
	"strata/configs"
)

type benchCase struct {
	name  string
	write bool
	bs    int
	jobs  int
	procs int // GOMAXPROCS while our side runs; 0: unchanged
}

type result struct {
	bw, iops  float64 // bytes/s, ops/s
	mean, p50 float64 // latency, ns
	cpuPerOp  float64 // CPU time (user+system) per I/O, ns
	bytes     uint64
}

var cases = []benchCase{
	{name: "seqwrite 1M", write: true, bs: 1 << 20, jobs: 1},
	{name: "seqwrite 16M", write: true, bs: 16 << 20, jobs: 1},
	{name: "randread 4K x1", write: false, bs: 4 << 10, jobs: 1},
	{name: "randread 4K x8", write: false, bs: 4 << 10, jobs: 8},
	{name: "randread 4K x32", write: false, bs: 4 << 10, jobs: 32},
	{name: "randread 64K x1", write: false, bs: 64 << 10, jobs: 1},
	{name: "randread 64K x8", write: false, bs: 64 << 10, jobs: 8},
	{name: "randread 64K x32", write: false, bs: 64 << 10, jobs: 32},
}

// config is what the flags say.
type config struct {
	path     string
	size     int64
	d        time.Duration
	fio      string
	only     string
	rounds   int
	procs    string // see the -procs flag
	keep     bool
	baseProc int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.path, "file", "", "bench file to create (required; must not exist; not on tmpfs)")
	sizeStr := flag.String("size", "1GiB", "file size (suffixes KiB, MiB, GiB)")
	flag.DurationVar(&cfg.d, "time", 5*time.Second, "time per case, side and round")
	flag.StringVar(&cfg.fio, "fio", "fio", "fio binary")
	flag.StringVar(&cfg.only, "run", "", "run only cases whose name contains this")
	flag.IntVar(&cfg.rounds, "rounds", 1, "rounds per case, sides alternating first; the median round is shown")
	flag.StringVar(&cfg.procs, "procs", "default",
		`GOMAXPROCS on our side: "default"; "jobs": raised to the job count where that is more; "both": a row for each`)
	flag.BoolVar(&cfg.keep, "keep", false, "keep the file afterwards")
	flag.Parse()
	size, err := configs.ParseSize(*sizeStr)
	switch {
	case err != nil:
	case size <= 0:
		err = errors.New("-size must be positive")
	case cfg.path == "":
		err = errors.New("-file is required")
	case cfg.rounds < 1 || cfg.d <= 0:
		err = errors.New("-rounds and -time must be positive")
	case cfg.procs != "default" && cfg.procs != "jobs" && cfg.procs != "both":
		err = errors.New(`-procs must be "default", "jobs" or "both"`)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "blockdev-bench:", err)
		os.Exit(2)
	}
	cfg.size, cfg.baseProc = size, runtime.GOMAXPROCS(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "blockdev-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg *config) error {
	if _, err := os.Stat(cfg.path); err == nil {
		return fmt.Errorf("%s exists; give a fresh path", cfg.path)
	}
	if _, err := exec.LookPath(cfg.fio); err != nil {
		return fmt.Errorf("fio not found (%w); install it: apt-get install fio", err)
	}
	dev, err := blockdev.Open(cfg.path, blockdev.Options{Size: cfg.size})
	if !cfg.keep {
		defer os.Remove(cfg.path)
	}
	if err != nil {
		return err
	}
	defer dev.Close()
	fmt.Printf("file %s, %d MiB, block size %d, direct I/O %v, %s per case, side and round, %d round(s), GOMAXPROCS %d\n",
		cfg.path, cfg.size>>20, dev.BlockSize(), blockdev.IsDirect(dev), cfg.d, cfg.rounds, cfg.baseProc)
	if !blockdev.IsDirect(dev) {
		fmt.Println("WARNING: our device is buffered (tmpfs?); the comparison with fio --direct=1 is meaningless")
	}
	pool := blockdev.NewPool(dev.BlockSize(), 256<<20)
	defer pool.Close()
	if err := fill(dev, pool); err != nil {
		return err
	}
	var rows []row
	for i, c := range expand(cases, cfg) {
		if !strings.Contains(c.name, cfg.only) || ctx.Err() != nil {
			continue
		}
		r, err := runCase(ctx, cfg, dev, pool, c, i)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		rows = append(rows, r)
	}
	printTable(os.Stdout, rows)
	return nil
}

// fill writes the whole file once, so reads hit written extents (reads of
// fallocated, never-written extents return zeros without touching the disk).
func fill(dev blockdev.Device, pool *blockdev.Pool) error {
	start := time.Now()
	b := pool.Acquire(16 << 20)
	defer pool.Release(b)
	for i := range b.B {
		b.B[i] = byte(i*31 + 7)
	}
	for off := int64(0); off < dev.Size(); off += int64(len(b.B)) {
		n := min(int64(len(b.B)), dev.Size()-off)
		if _, err := dev.WriteAt(b.B[:n], off); err != nil {
			return err
		}
	}
	if err := dev.Sync(); err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Printf("filled in %v (%.0f MiB/s)\n", el.Round(time.Millisecond), float64(dev.Size())/el.Seconds()/(1<<20))
	return nil
}

type row struct {
	c         benchCase
	fio, ours result
}

// expand applies -procs: cases with more jobs than GOMAXPROCS get a variant
// whose side runs with GOMAXPROCS = jobs ("P=jobs" rows), in place of the
// plain one or after it.
func expand(cases []benchCase, cfg *config) []benchCase {
	var out []benchCase
	for _, c := range cases {
		raise := c.jobs > cfg.baseProc && cfg.procs != "default"
		if !raise || cfg.procs == "both" {
			out = append(out, c)
		}
		if raise {
			c.name += " P=" + strconv.Itoa(c.jobs)
			c.procs = c.jobs
			out = append(out, c)
		}
	}
	return out
}

// runCase runs both sides cfg.rounds times, alternating which goes first
// (whoever runs second may find the host's caches warmer), and keeps each
// side's median round by bandwidth.
func runCase(ctx context.Context, cfg *config, dev blockdev.Device, pool *blockdev.Pool, c benchCase, i int) (row, error) {
	var fios, ours []result
	for round := range cfg.rounds {
		sides := []func() error{
			func() error {
				r, err := runFio(ctx, cfg.fio, cfg.path, cfg.size, c, cfg.d)
				fios = append(fios, r)
				return err
			},
			func() error {
				if c.procs != 0 {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
				}
				r, err := runOurs(dev, pool, c, cfg.d)
				ours = append(ours, r)
				return err
			},
		}
		if (i+round)%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, s := range sides {
			if err := s(); err != nil {
				return row{}, err
			}
		}
	}
	return row{c: c, fio: median(fios), ours: median(ours)}, nil
}

func median(rs []result) result {
	slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.bw, b.bw) })
	return rs[len(rs)/2]
}

func printTable(w io.Writer, rows []row) {
	fmt.Fprintf(w, "\n%-21s | %9s %9s %6s | %9s %9s %6s | %8s %8s | %8s %8s | %10s %10s\n",
		"case", "fio MiB/s", "our MiB/s", "ratio", "fio IOPS", "our IOPS", "ratio", "fio mean", "our mean", "fio p50", "our p50", "fio cpu/op", "our cpu/op")
	fmt.Fprintln(w, strings.Repeat("-", 21)+"-+-"+strings.Repeat("-", 26)+"-+-"+strings.Repeat("-", 26)+"-+-"+strings.Repeat("-", 17)+"-+-"+strings.Repeat("-", 17)+"-+-"+strings.Repeat("-", 21))
	for _, r := range rows {
		f, o := r.fio, r.ours
		fmt.Fprintf(w, "%-21s | %9.1f %9.1f %5.0f%% | %9.0f %9.0f %5.0f%% | %6.0fµs %6.0fµs | %6.0fµs %6.0fµs | %8.1fµs %8.1fµs\n",
			r.c.name, f.bw/(1<<20), o.bw/(1<<20), pct(o.bw, f.bw), f.iops, o.iops, pct(o.iops, f.iops),
			f.mean/1e3, o.mean/1e3, f.p50/1e3, o.p50/1e3, f.cpuPerOp/1e3, o.cpuPerOp/1e3)
	}
	fmt.Fprintln(w, "latency: mean of the whole I/O (fio lat_ns), p50 of completion (fio clat_ns; psync submits synchronously).")
	fmt.Fprintln(w, "cpu/op: user+system CPU time per I/O (fio: usr_cpu+sys_cpu of job_runtime; ours: getrusage of this process).")
}

func pct(ours, fio float64) float64 {
	if fio == 0 {
		return 0
	}
	return 100 * ours / fio
}

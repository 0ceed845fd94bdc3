// Command engine-bench measures strata's disk engine (disk.Engine) on a
// file device (blockdev.Open, O_DIRECT) against fio on the same file in
// the same run, for the targets of the engine's issue:
//
//	write   device write rate, no admission limit, vs fio sequential
//	        direct writes of one flush buffer (target ≥ 90%)
//	rate    device write rate under admission.RateLimiter set to -rate × the
//	        lower of fio's and our unlimited rate above (target within ±5%
//	        of the limit)
//	get     disk-hit Get latency vs fio random reads (psync, direct) of the
//	        entry size, 4 and 64 KiB, 1 and 8 readers (target p50 ≤ 1.5×);
//	        GOMAXPROCS is printed per row: a goroutine blocked in pread holds
//	        its P, so equal in-flight reads need GOMAXPROCS ≥ readers
//	recover disk.Open of a -recsize file full of 16 KiB entries, page cache
//	        dropped first (target < 5 s), beside fio's sequential read rate
//	ram     index bytes per entry and GC cost with -entries entries
//	        (targets ≤ 24 B, < 5 ms)
//
// Each figure is the median of -rounds rounds; within a round fio and
// ours run one after the other. The files are created in -dir and
// removed at the end.
//
//	engine-bench -dir /var/tmp -time 3s -rounds 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"strata/blockdev"
	"strata/configs"
)

type config struct {
	dir      string
	size     int64 // write/get file
	recSize  int64 // recovery file
	d        time.Duration
	rounds   int
	fio      string
	only     string
	entries  int
	rate     float64
	flushers int
	buffer   int
	entry    int
	runtime  string
	memprof  string
}

// row is one line of the result table.
type row struct {
	name    string
	unit    string
	fio     float64 // 0: no fio figure
	ours    float64
	ratio   float64 // ours/fio, or ours/limit
	target  string
	ok      bool
	comment string
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func main() {
	var cfg config
	flag.StringVar(&cfg.dir, "dir", os.TempDir(), "directory for the bench files (a real file system, not tmpfs)")
	size := flag.String("size", "1GiB", "size of the write/get bench file")
	rec := flag.String("recsize", "4GiB", "size of the recovery bench file")
	flag.DurationVar(&cfg.d, "time", 3*time.Second, "time per case, side and round")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds per case; medians are printed")
	flag.StringVar(&cfg.fio, "fio", "fio", "fio binary")
	flag.StringVar(&cfg.only, "run", "write,rate,get,recover,ram", "cases to run, comma-separated")
	flag.IntVar(&cfg.entries, "entries", 5_000_000, "entries for the ram case")
	flag.Float64Var(&cfg.rate, "rate", 0.5, "rate case: limit as a fraction of fio's write rate")
	flag.IntVar(&cfg.flushers, "flushers", 4, "write case: flushers")
	flag.IntVar(&cfg.buffer, "buffer", 8<<20, "write case: flush buffer bytes (fio writes blocks of this size)")
	flag.IntVar(&cfg.entry, "entry", 256<<10, "write case: entry bytes (key+value)")
	flag.StringVar(&cfg.runtime, "runtime", "separated", "get case: engine runtime mode (disabled | unified | separated)")
	flag.StringVar(&cfg.memprof, "memprofile", "", "ram case: write a heap profile here after inserting")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
	flag.Parse()
	var err error
	if cfg.size, err = configs.ParseSize(*size); err == nil {
		cfg.recSize, err = configs.ParseSize(*rec)
	}
	if err == nil && (cfg.size <= 0 || cfg.recSize <= 0) {
		err = errors.New("-size and -recsize must be positive")
	}
	if err == nil && (cfg.rounds < 1 || cfg.d <= 0) {
		err = errors.New("-rounds and -time must be positive")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine-bench:", err)
		os.Exit(2)
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "engine-bench:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, &cfg); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "engine-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg *config) error {
	if _, err := exec.LookPath(cfg.fio); err != nil {
		return fmt.Errorf("fio not found (%w); install it: apt-get install fio", err)
	}
	dir, err := os.MkdirTemp(cfg.dir, "engine-bench.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("dir %s, %s per side and round, %d round(s), GOMAXPROCS %d, %d CPUs\n",
		dir, cfg.d, cfg.rounds, runtime.GOMAXPROCS(0), runtime.NumCPU())
	want := func(c string) bool { return slices.Contains(strings.Split(cfg.only, ","), c) }
	var rows []row
	path := filepath.Join(dir, "dev")
	var fioWrite float64
	if want("write") || want("rate") {
		r, bw, err := benchWrite(ctx, cfg, path)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		fioWrite = min(bw, r.ours*(1<<20)) // the limit must be below what both can do
		if want("write") {
			rows = append(rows, r)
		}
		if want("rate") {
			r, err := benchRate(ctx, cfg, path, fioWrite)
			if err != nil {
				return fmt.Errorf("rate: %w", err)
			}
			rows = append(rows, r)
		}
	}
	if want("get") {
		rs, err := benchGet(ctx, cfg, path)
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		rows = append(rows, rs...)
	}
	os.Remove(path)
	if want("recover") {
		rs, err := benchRecover(ctx, cfg, filepath.Join(dir, "rec"))
		if err != nil {
			return fmt.Errorf("recover: %w", err)
		}
		rows = append(rows, rs...)
	}
	if want("ram") {
		rs, err := benchRAM(ctx, cfg, filepath.Join(dir, "ram"))
		if err != nil {
			return fmt.Errorf("ram: %w", err)
		}
		rows = append(rows, rs...)
	}
	printTable(os.Stdout, rows)
	return nil
}

// openDev opens path as a file device of size bytes (created if missing).
func openDev(path string, size int64) (blockdev.Device, error) {
	dev, err := blockdev.Open(path, blockdev.Options{Size: size, Logger: quiet})
	if err != nil {
		return nil, err
	}
	if !blockdev.IsDirect(dev) {
		fmt.Println("WARNING: the device is buffered (tmpfs?): comparisons with fio --direct=1 mean nothing")
	}
	return dev, nil
}

func printTable(w io.Writer, rows []row) {
	fmt.Fprintf(w, "\n%-28s | %12s %12s %8s | %-10s %-4s | %s\n", "case", "fio", "ours", "ratio", "target", "met", "notes")
	fmt.Fprintln(w, strings.Repeat("-", 120))
	for _, r := range rows {
		f := "-"
		if r.fio != 0 {
			f = fmt.Sprintf("%.1f", r.fio)
		}
		met := "no"
		if r.ok {
			met = "yes"
		}
		fmt.Fprintf(w, "%-28s | %12s %12s %8.3f | %-10s %-4s | %s\n",
			r.name+" ("+r.unit+")", f, fmt.Sprintf("%.1f", r.ours), r.ratio, r.target, met, r.comment)
	}
}

// median returns the median of xs (the upper one for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func mib(b float64) float64 { return b / (1 << 20) }

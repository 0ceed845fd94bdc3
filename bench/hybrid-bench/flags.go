package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"strata/configs"
)

// config is what the command line says. Field comments give the flag and
// its default; defaults follow foyer-bench's where it has the flag.
type config struct {
	File   string // --file: device or file path (created if missing)
	NoDisk bool   // --no-disk: memory tier only

	Mem, Disk  int64 // --mem, --disk [1GiB each]
	RegionSize int64 // --region-size [64MiB]
	BufferSize int64 // --buffer-size [0 = engine default] (strata's own)
	QueueBytes int64 // --queue-size [0 = engine default] (strata's own)
	GetRange   uint64

	Flushers, Reclaimers int // [4, 4]
	Time, WarmUp         int // seconds [60, 2]
	ReportInterval       int // seconds [2]
	Writers, Readers     int // [16, 16]
	WRate, RRate         int64
	EntryMin, EntryMax   int64 // [64KiB, 64KiB]
	AdmissionRate        int64 // --admission-rate-limit [0 = admit all]

	Runtime                             string // disabled|unified|separated [disabled]
	ReadWorkers, WriteWorkers           int    // [0 = engine default]
	Distribution                        string // uniform|zipf [uniform]
	ZipfS                               float64
	Latency                             time.Duration // --latency: origin fetch on a miss [0]
	Eviction                            string        // s3fifo|lru|fifo [lru, as foyer-bench]
	Policy                              string        // eviction|insertion [eviction]
	RecoverMode                         string        // none|quiet|strict [none]
	Metrics                             bool
	MetricsAddr                         string
	JSON, CPUProfile, MemProfile, Trace string
	Compare                             bool     `json:"-"`
	CompareFiles                        []string `json:"-"`
}

// parseFlags parses args (without the program name). Every problem is
// reported at once. --help prints the usage to out and returns
// flag.ErrHelp.
func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("hybrid-bench", flag.ContinueOnError)
	fs.SetOutput(out)
	var sizes []sizeFlag
	size := func(p *int64, name, def, usage string, rate bool) {
		sizes = append(sizes, sizeFlag{p: p, name: name, rate: rate, text: fs.String(name, def, usage)})
	}
	fs.StringVar(&c.File, "file", "", "device or file for the disk tier (a file is created and preallocated); several, comma-separated, each of --disk bytes, spread keys over them")
	fs.BoolVar(&c.NoDisk, "no-disk", false, "memory tier only")
	size(&c.Mem, "mem", "1GiB", "memory tier capacity", false)
	size(&c.Disk, "disk", "1GiB", "disk tier capacity (device bytes used)", false)
	size(&c.RegionSize, "region-size", "64MiB", "disk region size", false)
	size(&c.BufferSize, "buffer-size", "0", "flush buffer size, two per flusher (0: engine default)", false)
	size(&c.QueueBytes, "queue-size", "0", "bytes accepted for disk but not yet written (0: engine default)", false)
	fs.Uint64Var(&c.GetRange, "get-range", 10000, "readers pick keys among the most recent N inserted")
	fs.IntVar(&c.Flushers, "flushers", 4, "flusher goroutines")
	fs.IntVar(&c.Reclaimers, "reclaimers", 4, "reclaimer goroutines")
	fs.IntVar(&c.Time, "time", 60, "measured run, seconds")
	fs.IntVar(&c.WarmUp, "warm-up", 2, "warm-up before measuring, seconds")
	fs.IntVar(&c.ReportInterval, "report-interval", 2, "seconds between interval reports")
	fs.IntVar(&c.Writers, "writers", 16, "writer goroutines")
	fs.IntVar(&c.Readers, "readers", 16, "reader goroutines")
	size(&c.WRate, "w-rate", "0", "insert bytes per second per writer (0: unlimited)", true)
	size(&c.RRate, "r-rate", "0", "hit bytes per second per reader (0: unlimited)", true)
	size(&c.EntryMin, "entry-size-min", "64KiB", "smallest value", false)
	size(&c.EntryMax, "entry-size-max", "64KiB", "largest value", false)
	size(&c.AdmissionRate, "admission-rate-limit", "0", "disk write rate limit, bytes per second (0: admit all)", true)
	fs.StringVar(&c.Runtime, "runtime", "disabled", "disk I/O runtime: disabled|unified|separated")
	fs.IntVar(&c.ReadWorkers, "read-runtime-workers", 0, "read pool goroutines (0: engine default)")
	fs.IntVar(&c.WriteWorkers, "write-runtime-workers", 0, "write pool goroutines, separated (0: engine default)")
	// foyer-bench's older spelling, so its command lines run unchanged.
	fs.IntVar(&c.ReadWorkers, "read-runtime-worker-threads", 0, "alias of --read-runtime-workers")
	fs.IntVar(&c.WriteWorkers, "write-runtime-worker-threads", 0, "alias of --write-runtime-workers")
	fs.StringVar(&c.Distribution, "distribution", "uniform", "reader key choice among the recent keys: uniform|zipf (newest hottest)")
	fs.Float64Var(&c.ZipfS, "distribution-zipf-s", 0.5, "Zipf exponent s > 0")
	latency := fs.String("latency", "0", "simulated origin fetch on a miss: milliseconds, or a duration such as 500us")
	fs.StringVar(&c.Eviction, "eviction", "lru", "memory eviction policy: s3fifo|lru|fifo")
	fs.StringVar(&c.Policy, "policy", "eviction", "when entries go to disk: eviction|insertion")
	fs.StringVar(&c.RecoverMode, "recover-mode", "none", "disk recovery at open: none|quiet|strict")
	fs.BoolVar(&c.Metrics, "metrics", false, "serve Prometheus metrics on --metrics-addr")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:19970", "loopback address for --metrics")
	fs.StringVar(&c.JSON, "json", "", "also write the figures as JSON to this file")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of warm-up and run to this file")
	fs.StringVar(&c.MemProfile, "memprofile", "", "write a heap profile (allocations since start) at the end of the run to this file")
	fs.StringVar(&c.Trace, "trace", "", "write an execution trace of the measured span (not the warm-up) to this file (go tool trace)")
	fs.BoolVar(&c.Compare, "compare", false, "print the JSON files given as arguments side by side, then exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range sizes {
		if err := s.parse(); err != nil {
			errs = append(errs, err)
		}
	}
	if d, err := parseLatency(*latency); err != nil {
		errs = append(errs, err)
	} else {
		c.Latency = d
	}
	if c.Compare {
		c.CompareFiles = fs.Args()
		if len(c.CompareFiles) == 0 {
			errs = append(errs, errors.New("hybrid-bench: --compare needs JSON files as arguments"))
		}
		return c, errors.Join(errs...)
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("hybrid-bench: unexpected arguments %q", fs.Args()))
	}
	errs = append(errs, c.validate()...)
	return c, errors.Join(errs...)
}

// sizeFlag is a size or rate flag kept as text until every flag is parsed.
type sizeFlag struct {
	p    *int64
	name string
	rate bool
	text *string
}

// parse reads the flag's text. A bare number other than 0 is refused:
// foyer-bench's old command lines meant MiB by it, ParseSize means bytes,
// and guessing either way would silently run another benchmark.
func (s sizeFlag) parse() error {
	t := strings.TrimSpace(*s.text)
	if t == "0" {
		*s.p = 0
		return nil
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return fmt.Errorf("hybrid-bench: --%s %s: give a unit, such as %sMiB (old foyer-bench command lines meant MiB)", s.name, t, t)
	}
	parse := configs.ParseSize
	if s.rate {
		parse = configs.ParseRate
	}
	v, err := parse(t)
	if err != nil {
		return fmt.Errorf("hybrid-bench: --%s: %w", s.name, err)
	}
	*s.p = v
	return nil
}

// parseLatency reads --latency: bare numbers are milliseconds (as
// foyer-bench's "0ms" default suggests), otherwise a Go duration.
func parseLatency(s string) (time.Duration, error) {
	if ms, err := strconv.ParseFloat(s, 64); err == nil {
		if ms < 0 || ms > 3.6e6 {
			return 0, fmt.Errorf("hybrid-bench: --latency %s ms not in [0, 1h]", s)
		}
		return time.Duration(ms * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > time.Hour {
		return 0, fmt.Errorf("hybrid-bench: --latency %q: want milliseconds or a duration in [0, 1h]", s)
	}
	return d, nil
}

// validate checks what the cache's own Options do not: the workload.
func (c *config) validate() []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("hybrid-bench: "+format, args...))
	}
	if (c.File == "") == !c.NoDisk {
		bad("give exactly one of --file and --no-disk")
	}
	if !c.NoDisk && (c.Disk <= 0 || c.Disk%4096 != 0) {
		bad("--disk %d must be a positive multiple of 4096", c.Disk)
	}
	if c.Time < 1 || c.WarmUp < 0 || c.ReportInterval < 1 {
		bad("--time %d and --report-interval %d must be ≥ 1, --warm-up %d ≥ 0", c.Time, c.ReportInterval, c.WarmUp)
	}
	if c.Writers < 1 || c.Readers < 0 || c.Writers > 1<<16 || c.Readers > 1<<16 {
		bad("--writers %d must be in [1, 65536], --readers %d in [0, 65536]", c.Writers, c.Readers)
	}
	if c.GetRange < 1 {
		bad("--get-range must be ≥ 1")
	}
	if c.EntryMin < 1 || c.EntryMax < c.EntryMin || c.EntryMax > 1<<30 {
		bad("--entry-size-min %d and --entry-size-max %d: want 1 ≤ min ≤ max ≤ 1GiB", c.EntryMin, c.EntryMax)
	}
	oneOf := func(flag, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad("--%s %q not %s", flag, v, strings.Join(allowed, "|"))
	}
	oneOf("runtime", c.Runtime, "disabled", "unified", "separated")
	oneOf("distribution", c.Distribution, "uniform", "zipf")
	oneOf("eviction", c.Eviction, "s3fifo", "lru", "fifo")
	oneOf("policy", c.Policy, "eviction", "insertion")
	oneOf("recover-mode", c.RecoverMode, "none", "quiet", "strict")
	if !(c.ZipfS > 0 && c.ZipfS < 100) {
		bad("--distribution-zipf-s %v not in (0, 100)", c.ZipfS)
	}
	if c.ReadWorkers < 0 || c.WriteWorkers < 0 {
		bad("runtime workers must be ≥ 0")
	}
	return errs
}

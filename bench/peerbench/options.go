package main

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// Options is the whole configuration of one run; flags fill it, then
// EnsureDefaults and Validate run before anything starts.
type Options struct {
	// Mem is every system's memory budget (default 256MiB): strata's -mem,
	// Varnish's malloc storage, Traffic Server's RAM cache. nginx and Varnish
	// file storage have no memory tier: the page cache, bounded by the
	// memory cgroup, is theirs.
	Mem int64
	// Disk is every system's disk budget (default 4GiB, so that scenario
	// 7's set of 8x Mem fits beside scenario 6's 1 GiB object).
	Disk int64
	// Cgroup is each system's memory cgroup limit (default 1GiB; at least
	// Mem + 64MiB): the memory tier plus code, threads, connection buffers,
	// metadata, and for nginx and Varnish file storage the page cache.
	// The defaults are the budgets of the published comparison: 256 MiB
	// memory, 4 GiB disk, 1 GiB cgroup.
	Cgroup int64
	// Duration of each wrk run (default 8s: the full run with every peer
	// stays under 10 minutes).
	Duration time.Duration
	// Threads and Connections of wrk (defaults 2 and 64, the issue's).
	Threads, Connections int
	// Scenarios selects scenarios by id ("1", "1b", "3"); empty means all.
	Scenarios []string
	// Systems selects systems by name; empty means all.
	Systems []string
	// Origin is "auto" (bin/origin if built, else the built-in origin),
	// "builtin", or a path to an origin binary.
	Origin string
	// Root is the repository root (default: found from the working directory).
	Root string
	// Strata is the strata binary (default Root/bin/strata).
	Strata string
	// Baseline is the system whose ratio to each peer is reported
	// (default "strata").
	Baseline string
	// Install runs apt-get for missing peers (default true).
	Install bool
	// Profile, when set, is a directory where a CPU profile of each strata
	// row is written for each scenario (strata-<id>.pprof,
	// strata-json-<id>.pprof...), taken during the measured run; empty
	// (the default) takes none.
	Profile string
	// Cores is the worker count given to every peer (default NumCPU).
	Cores int
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	setDefault(&o.Mem, 256<<20)
	setDefault(&o.Disk, 4<<30)
	setDefault(&o.Cgroup, 1<<30)
	setDefault(&o.Duration, 8*time.Second)
	setDefault(&o.Threads, 2)
	setDefault(&o.Connections, 64)
	setDefault(&o.Cores, runtime.NumCPU())
	if o.Origin == "" {
		o.Origin = "auto"
	}
	if o.Baseline == "" {
		o.Baseline = "strata"
	}
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate reports every problem at once, wrapped in ErrOptions.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Mem < 1<<20 || o.Mem > 64<<30 {
		bad("-mem %d: want 1MiB..64GiB", o.Mem)
	}
	if o.Disk < 64<<20 || o.Disk > 512<<30 {
		bad("-disk %d: want 64MiB..512GiB", o.Disk)
	}
	if o.Cgroup < o.Mem+64<<20 {
		bad("-cgroup %d: want at least -mem + 64MiB", o.Cgroup)
	}
	if o.Duration < time.Second || o.Duration > 10*time.Minute {
		bad("-duration %v: want 1s..10m", o.Duration)
	}
	if o.Threads < 1 || o.Threads > 64 || o.Connections < o.Threads || o.Connections > 4096 {
		bad("-threads %d -connections %d: want 1..64 threads, threads..4096 connections", o.Threads, o.Connections)
	}
	for _, s := range o.Systems {
		if systemByName(s) == nil {
			bad("-systems: unknown system %q (have %s)", s, strings.Join(systemNames(), ","))
		}
	}
	for _, s := range o.Scenarios {
		if len(selectScenarios([]string{s})) == 0 {
			bad("-scenarios: unknown scenario %q", s)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrOptions, errors.Join(errs...))
	}
	return nil
}

// sizeFlag adapts an int64 byte count to flag.Value.
type sizeFlag struct{ p *int64 }

func (f sizeFlag) String() string {
	if f.p == nil {
		return ""
	}
	return formatSize(*f.p)
}

func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.p = n
	return nil
}

// listFlag reads a comma-separated list.
type listFlag struct{ p *[]string }

func (f listFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strings.Join(*f.p, ",")
}

func (f listFlag) Set(s string) error {
	*f.p = splitList(s)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseFlags fills Options from args (without the program name).
func parseFlags(args []string) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("peerbench", flag.ContinueOnError)
	fs.Var(sizeFlag{&o.Mem}, "mem", "memory budget of every system (default 256MiB)")
	fs.Var(sizeFlag{&o.Disk}, "disk", "disk budget of every system (default 4GiB)")
	fs.Var(sizeFlag{&o.Cgroup}, "cgroup", "memory cgroup limit of every system (default 1GiB)")
	fs.DurationVar(&o.Duration, "duration", 0, "wrk duration per system and scenario (default 8s)")
	fs.IntVar(&o.Threads, "threads", 0, "wrk threads (default 2)")
	fs.IntVar(&o.Connections, "connections", 0, "wrk connections (default 64)")
	fs.Var(listFlag{&o.Scenarios}, "scenarios", "comma-separated scenario ids, e.g. 1,3 (default all)")
	fs.Var(listFlag{&o.Systems}, "systems", "comma-separated systems: "+strings.Join(systemNames(), ","))
	fs.StringVar(&o.Origin, "origin", "auto", "auto | builtin | path of an origin binary")
	fs.StringVar(&o.Root, "root", "", "repository root (default: found from the working directory)")
	fs.StringVar(&o.Strata, "strata", "", "strata binary (default ROOT/bin/strata)")
	fs.StringVar(&o.Baseline, "baseline", "strata", "system whose ratio to each peer is reported")
	fs.BoolVar(&o.Install, "install", true, "apt-get install missing peers")
	fs.StringVar(&o.Profile, "profile", "", "directory for a CPU profile of each strata row per scenario (default none)")
	fs.IntVar(&o.Cores, "cores", 0, "workers per peer (default: number of CPUs)")
	err := fs.Parse(args)
	return o, err
}

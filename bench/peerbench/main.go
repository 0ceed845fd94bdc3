// Command peerbench runs strata side by side with nginx proxy_cache,
// Varnish (malloc and file storage) and Apache Traffic Server on one
// origin, in one run, on loopback, and reports strata's ratio to
// each peer as a table, JSON and a PNG chart under bench/results/.
//
// Every system gets the same memory and disk budgets and, where the
// machine allows, a memory cgroup of the same size, so that a page cache
// cannot stand in for a disk tier. Each scenario runs against every
// system in turn, after the same warm-up and a sync(2) that writes back
// every dirty page on the machine (settle), with wrk and bench/wrk/bench.lua.
//
// Everything peerbench starts (origin, peers, wrk) is stopped by pid on
// every exit path, SIGINT and SIGTERM included, and its temp dir removed.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Root == "" {
		if o.Root, err = findRoot(); err != nil {
			return err
		}
	}
	if o.Strata == "" {
		o.Strata = filepath.Join(o.Root, "bin", "strata")
	}
	if o.Profile != "" {
		if err := os.MkdirAll(o.Profile, 0o755); err != nil {
			return fmt.Errorf("peerbench: -profile: %w", err)
		}
	}
	tmp, err := os.MkdirTemp("", "peerbench-")
	if err != nil {
		return fmt.Errorf("peerbench: temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	r := newRunner(&o, tmp)
	defer r.cleanup()
	return r.run(ctx)
}

// findRoot walks up from the working directory to strata's go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module strata\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("peerbench: not inside the strata repository (use -root)")
		}
		dir = parent
	}
}

// running is a system that started and answered its probe.
type running struct {
	sys *system
	env *sysEnv
	p   *proc
	cg  *cgroup
}

// runner owns one run: the processes, cgroups and the report.
type runner struct {
	o         *Options
	tmp       string
	benchDir  string
	ps        procs
	cgroups   []*cgroup
	origin    *builtinOrigin
	originBin *proc // bin/origin, when it is the origin
	originURL string
	live      []*running
	rep       *report
}

func newRunner(o *Options, tmp string) *runner {
	host, _ := os.Hostname()
	return &runner{o: o, tmp: tmp, benchDir: filepath.Join(o.Root, "bench"), rep: &report{
		Started: time.Now().UTC(), Host: host, Mem: formatSize(o.Mem), Disk: formatSize(o.Disk),
		Duration: o.Duration.String(), Baseline: o.Baseline,
		Systems: map[string]string{}, Cgroups: map[string]string{}, Scenarios: map[string]string{},
	}}
}

// cleanup stops every process (reverse start order), then removes the
// cgroups, then stops the built-in origin.
func (r *runner) cleanup() {
	r.ps.stopAll()
	for _, cg := range r.cgroups {
		cg.remove()
	}
	if r.origin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.origin.Close(ctx)
	}
}

func (r *runner) run(ctx context.Context) error {
	systems := r.selectedSystems()
	missing := ensureInstalled(systems, r.o.Install)
	if err := missing["wrk"]; err != nil {
		return fmt.Errorf("peerbench: cannot measure without wrk: %w", err)
	}
	originURL, err := r.startOrigin(ctx)
	if err != nil {
		return err
	}
	r.originURL = originURL
	r.rep.Origin = "bin/origin " + originURL
	if r.origin != nil {
		r.rep.Origin = "built-in " + originURL
	}
	fmt.Fprintf(os.Stderr, "peerbench: origin %s\n", originURL)
	scs := filterScenarios(scenarios(r.o.Mem), r.o.Scenarios)
	for _, s := range systems {
		if err := missing[s.Package]; s.Package != "" && err != nil {
			r.rep.Systems[s.Name] = "not installed"
			fmt.Fprintf(os.Stderr, "peerbench: skipping %s: %v\n", s.Name, err)
			continue
		}
		if !slices.ContainsFunc(scs, s.takesPart) {
			r.rep.Systems[s.Name] = "not started: in none of the scenarios"
			continue
		}
		r.startSystem(ctx, s, originURL)
	}
	for _, sc := range scs {
		r.rep.Scenarios[sc.ID+" "+sc.Name] = sc.Desc
		for _, s := range systems {
			if !s.takesPart(sc) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("peerbench: interrupted: %w", err)
			}
			r.rep.Results = append(r.rep.Results, r.measure(ctx, sc, s))
		}
	}
	return r.finish()
}

func (r *runner) selectedSystems() []*system {
	if len(r.o.Systems) == 0 {
		return allSystems
	}
	var out []*system
	for _, n := range r.o.Systems {
		out = append(out, systemByName(n))
	}
	return out
}

func (r *runner) finish() error {
	r.rep.Ratios = computeRatios(r.rep.Results, r.o.Baseline)
	r.rep.Summary = summarize(r.rep.Results, r.o.Baseline)
	printTable(os.Stdout, r.rep)
	printSummary(os.Stdout, r.rep)
	dir := filepath.Join(r.o.Root, "bench", "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stem := filepath.Join(dir, "peerbench-"+r.rep.Started.Format("20060102-150405"))
	if err := writeJSON(stem+".json", r.rep); err != nil {
		return fmt.Errorf("peerbench: json: %w", err)
	}
	if err := writeChart(stem+".png", r.rep); err != nil {
		return fmt.Errorf("peerbench: chart: %w", err)
	}
	fmt.Printf("wrote %s.json and %s.png\n", stem, stem)
	return nil
}

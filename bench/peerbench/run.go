package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// startOrigin starts bin/origin (mode auto when built, or a path), else
// the built-in stand-in, and returns its base URL.
func (r *runner) startOrigin(ctx context.Context) (string, error) {
	bin := r.o.Origin
	if bin == "auto" {
		bin = filepath.Join(r.o.Root, "bin", "origin")
		if _, err := os.Stat(bin); err != nil {
			bin = "builtin"
		}
	}
	if bin != "builtin" {
		url, err := r.startOriginBinary(ctx, bin)
		if err == nil || r.o.Origin != "auto" {
			return url, err
		}
		fmt.Fprintf(os.Stderr, "peerbench: %s did not start (%v); using the built-in origin\n", bin, err)
	}
	o, err := startBuiltinOrigin()
	if err != nil {
		return "", err
	}
	r.origin = o
	return o.URL(), nil
}

func (r *runner) startOriginBinary(ctx context.Context, bin string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	p, err := r.ps.start("origin", nil, filepath.Join(r.tmp, "origin.log"), nil, bin, "-listen", listen)
	if err != nil {
		return "", err
	}
	url := "http://" + listen
	if err := waitReady(ctx, p, url, 20*time.Second); err != nil {
		p.stop()
		return "", err
	}
	r.originBin = p
	return url, nil
}

// startSystem configures, starts and probes one system; on failure its
// status says why and the run goes on without it.
func (r *runner) startSystem(ctx context.Context, s *system, originURL string) {
	fail := func(status string, err error) {
		r.rep.Systems[s.Name] = status
		fmt.Fprintf(os.Stderr, "peerbench: skipping %s: %v\n", s.Name, err)
	}
	dir := filepath.Join(r.tmp, s.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail("failed", err)
		return
	}
	env, err := newSysEnv(s.Name, dir, r.benchDir, originURL, r.o)
	if err != nil {
		fail("failed", err)
		return
	}
	argv, envv, err := s.prepare(env)
	if errors.Is(err, ErrUnavailable) {
		fail("not built", err)
		return
	} else if err != nil {
		fail("failed: config", err)
		return
	}
	cg := r.cgroupFor(s.Name)
	logPath := filepath.Join(dir, s.Name+".log")
	p, err := r.ps.start(s.Name, cg, logPath, envv, argv...)
	if err != nil {
		fail("failed: start", err)
		return
	}
	if err := waitReady(ctx, p, "http://"+env.Listen, 90*time.Second); err != nil {
		log, _ := os.ReadFile(logPath)
		p.stop()
		fail("failed: not ready", fmt.Errorf("%w\n%s", err, tail(log, 800)))
		return
	}
	r.rep.Systems[s.Name] = "running on " + env.Listen
	r.live = append(r.live, &running{sys: s, env: env, p: p, cg: cg})
	fmt.Fprintf(os.Stderr, "peerbench: %s ready on %s (pid %d)\n", s.Name, env.Listen, p.pid())
}

// cgroupFor makes the system's memory cgroup, or records why it could not.
func (r *runner) cgroupFor(name string) *cgroup {
	limit := r.o.Cgroup
	cg, err := newCgroup(name, limit)
	if err != nil {
		r.rep.Cgroups[name] = "none: " + err.Error()
		fmt.Fprintf(os.Stderr, "peerbench: %s runs without a memory cgroup: %v\n", name, err)
		return nil
	}
	r.cgroups = append(r.cgroups, cg)
	r.rep.Cgroups[name] = formatSize(limit) + " at " + cg.dir
	return cg
}

// measure warms one system up for a scenario, writes back the machine's
// dirty pages (settle), then runs wrk and reads the proxy's CPU time and
// peak memory around it.
func (r *runner) measure(ctx context.Context, sc scenario, s *system) result {
	var rn *running
	for _, x := range r.live {
		if x.sys == s {
			rn = x
		}
	}
	label := sc.ID + " " + sc.Name
	if rn == nil {
		return result{Scenario: label, System: s.Name, Status: r.rep.Systems[s.Name]}
	}
	if !rn.p.alive() {
		return result{Scenario: label, System: s.Name, Status: r.died(rn)}
	}
	base := "http://" + rn.env.Listen
	var snap0, snap1 counterSnapshot
	if s.Name == "strata" {
		snap0 = scrapeStrata(ctx, rn.env.AdminListen)
	}
	warmErr := warm(ctx, base, sc.Warm)
	if s.Name == "strata" {
		snap1 = scrapeStrata(ctx, rn.env.AdminListen)
	}
	if d := settle(); d > 100*time.Millisecond {
		fmt.Fprintf(os.Stderr, "peerbench: %-16s %-20s sync before the run took %v\n", s.Name, label, d.Round(time.Millisecond))
	}
	pid := rn.p.pid()
	resetPeakRSS(pid)
	if rn.cg != nil {
		rn.cg.resetPeak()
	}
	cpu0, ocpu0, orig0 := cpuSeconds(pid), r.originCPU(), r.originRequests()
	tag := fmt.Sprintf("%s-%d", s.Name, time.Now().UnixNano())
	var prof *profiler
	if strings.HasPrefix(s.Name, "strata") && r.o.Profile != "" {
		prof = startProfile(ctx, rn.env.AdminListen, r.o.Profile, s.Name, sc.ID, r.o.Duration)
	}
	w, _, err := runWrk(ctx, wrkArgv(r.o, r.benchDir, rn.env.Listen, sc, tag), r.o.Duration)
	prof.wait()
	cpu, ocpu, orig := cpuSeconds(pid)-cpu0, r.originCPU()-ocpu0, r.originRequests()-orig0
	if !rn.p.alive() {
		return result{Scenario: label, System: s.Name, Status: r.died(rn)}
	}
	if err != nil {
		return result{Scenario: label, System: s.Name, Status: "failed" + r.oomNote(rn) + ": " + err.Error(), WarmErrors: warmErr}
	}
	var cgPeak int64
	if rn.cg != nil {
		cgPeak = rn.cg.peak()
	}
	res := newResult(sc, s.Name, w, cpu, peakRSS(pid), cgPeak)
	res.Reference = s.Reference
	res.WarmErrors = warmErr
	res.OriginRequests, res.HitRatio = -1, -1
	if orig0 >= 0 {
		res.OriginRequests = orig
		res.HitRatio = hitRatio(w.Requests, orig)
	}
	res.OriginCPUus = -1
	if ocpu0 >= 0 {
		res.OriginCPUus = perRequestUS(ocpu, w.Requests)
	}
	res.WrkCPUus = perRequestUS(w.CPUSeconds, w.Requests)
	if s.Name == "strata" {
		res.StrataWarm = delta(snap0, snap1)
		res.StrataRun = delta(snap1, scrapeStrata(ctx, rn.env.AdminListen))
	}
	fmt.Fprintf(os.Stderr, "peerbench: %-16s %-20s %10.0f req/s  p99 %.2f ms  CPU %.1f µs/req  hits %s  errors %d+%d\n",
		s.Name, label, res.RPS, res.P99ms, res.CPUus, percent(res.HitRatio), res.Errors, warmErr)
	if len(sc.Warm) > 0 && res.StrataWarm != nil {
		fmt.Fprintf(os.Stderr, "peerbench: %-16s %-20s warm-up: %s\n", s.Name, label, res.StrataWarm)
	}
	if res.StrataRun != nil {
		fmt.Fprintf(os.Stderr, "peerbench: %-16s %-20s run: %s\n", s.Name, label, res.StrataRun)
	}
	return res
}

// originCPU is the origin's CPU seconds so far: bin/origin's process
// tree, or, for the built-in origin, this process's own (which does
// nothing else while wrk runs); -1 if unknown.
func (r *runner) originCPU() float64 {
	switch {
	case r.origin != nil:
		return selfCPUSeconds()
	case r.originBin != nil:
		return cpuSeconds(r.originBin.pid())
	}
	return -1
}

// originRequests is the origin's request count: the built-in origin's
// counter, or the "requests" of bin/origin's GET /_stats; -1 if unknown.
func (r *runner) originRequests() int64 {
	if r.origin != nil {
		return r.origin.requests.Load()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.originURL+"/_stats", nil)
	if err != nil {
		return -1
	}
	resp, err := warmClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var st struct {
		Requests *int64 `json:"requests"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st) != nil || st.Requests == nil {
		return -1
	}
	return *st.Requests
}

func (r *runner) died(rn *running) string { return "died" + r.oomNote(rn) }

// oomNote names the OOM kills in the system's cgroup so far, if any (a
// Varnish child killed for the limit is restarted by its manager).
func (r *runner) oomNote(rn *running) string {
	if rn.cg != nil {
		if n := rn.cg.oomKills(); n > 0 {
			return fmt.Sprintf(" (%d OOM kills in its cgroup)", n)
		}
	}
	return ""
}

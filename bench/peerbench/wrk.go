package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// wrkResult is what bench/wrk/bench.lua's done() prints after "PEERBENCH ".
type wrkResult struct {
	DurationUS int64 `json:"duration_us"`
	Requests   int64 `json:"requests"`
	Bytes      int64 `json:"bytes"`
	P50US      int64 `json:"p50_us"`
	P99US      int64 `json:"p99_us"`
	P999US     int64 `json:"p999_us"`
	ErrConnect int64 `json:"err_connect"`
	ErrRead    int64 `json:"err_read"`
	ErrWrite   int64 `json:"err_write"`
	ErrStatus  int64 `json:"err_status"`
	ErrTimeout int64 `json:"err_timeout"`
	// CPUSeconds is wrk's own user+system time, from its exit status.
	CPUSeconds float64 `json:"-"`
}

func (w wrkResult) errors() int64 {
	return w.ErrConnect + w.ErrRead + w.ErrWrite + w.ErrStatus + w.ErrTimeout
}

// parseWrk finds the PEERBENCH line in wrk's output.
func parseWrk(out []byte) (wrkResult, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PEERBENCH ")
		if !ok {
			continue
		}
		var r wrkResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return wrkResult{}, fmt.Errorf("%w: %w", ErrWrkOutput, err)
		}
		if r.DurationUS <= 0 || r.Requests < 0 || r.Bytes < 0 {
			return wrkResult{}, fmt.Errorf("%w: implausible %q", ErrWrkOutput, line)
		}
		return r, nil
	}
	return wrkResult{}, ErrWrkOutput
}

// wrkArgv is the command line of one measured run.
func wrkArgv(o *Options, benchDir, listen string, sc scenario, tag string) []string {
	conns := o.Connections
	if sc.Connections > 0 {
		conns = sc.Connections
	}
	threads := min(o.Threads, conns)
	argv := []string{"wrk", "-t", fmt.Sprint(threads), "-c", fmt.Sprint(conns),
		"-d", fmt.Sprintf("%ds", int(o.Duration.Seconds())), "--latency", "--timeout", "30s",
		"-s", filepath.Join(benchDir, "wrk", "bench.lua"), "http://" + listen + "/", "--"}
	return append(argv, sc.wrkArgs(tag)...)
}

// runWrk runs wrk, bounded by its duration plus a minute.
func runWrk(ctx context.Context, argv []string, d time.Duration) (wrkResult, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, d+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, out, fmt.Errorf("peerbench: wrk: %w: %s", err, tail(out, 400))
	}
	r, err := parseWrk(out)
	if st := cmd.ProcessState; st != nil {
		r.CPUSeconds = (st.UserTime() + st.SystemTime()).Seconds()
	}
	return r, out, err
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

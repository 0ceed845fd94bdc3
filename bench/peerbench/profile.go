package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// profiler takes one CPU profile of strata during a measured run, from
// the /debug/pprof/ endpoint its -pprof flag serves on the admin listener
// (a profile of each scenario where strata is behind says why).
// The goroutine it starts is owned by it: wait returns once it ended.
type profiler struct {
	done chan error
}

// startProfile asks a strata row (strata, strata-json...) at admin for a
// CPU profile lasting most of d (it starts as wrk starts and must end
// before wrk does) and writes it to dir/<system>-<scenario id>.pprof. A
// nil *profiler does nothing.
func startProfile(ctx context.Context, admin, dir, system, scenarioID string, d time.Duration) *profiler {
	secs := max(1, int((d-time.Second)/time.Second))
	p := &profiler{done: make(chan error, 1)}
	go func() {
		p.done <- fetchProfile(ctx, "http://"+admin+fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs),
			filepath.Join(dir, system+"-"+scenarioID+".pprof"), d+30*time.Second)
	}()
	return p
}

func (p *profiler) wait() {
	if p == nil {
		return
	}
	if err := <-p.done; err != nil {
		fmt.Fprintf(os.Stderr, "peerbench: profile: %v\n", err)
	}
}

func fetchProfile(ctx context.Context, url, dst string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("peerbench: %s: status %d: %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(resp.Body, 256<<20)); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "peerbench: wrote %s\n", dst)
	return nil
}

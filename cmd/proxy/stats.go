package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"strata/cmd/proxy/internal/stats"
)

// statsFlags are `strata stats`'s command line.
type statsFlags struct {
	admin    string
	interval time.Duration
	once     bool
}

func parseStatsFlags(args []string, stderr io.Writer) (*statsFlags, error) {
	f := &statsFlags{}
	fs := flag.NewFlagSet("strata stats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.admin, "admin", "127.0.0.1:9090", "the node's admin listener, `addr` or http://addr")
	fs.DurationVar(&f.interval, "interval", time.Second, "refresh interval, and the window of the rates")
	fs.BoolVar(&f.once, "once", false, "print one snapshot (rates over one interval) and exit, for scripts")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: strata stats [flags]\n\nA live view of a running node's /metrics, refreshed every interval (Ctrl-C quits).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 || f.interval <= 0 {
		fs.Usage()
		return nil, errors.New("strata stats: bad arguments")
	}
	if !strings.Contains(f.admin, "://") {
		f.admin = "http://" + f.admin
	}
	return f, nil
}

// runStats is `strata stats`: scrape, wait an interval, scrape, render;
// with -once that is all, else it repeats, clearing the screen, until
// SIGINT or SIGTERM. A failed scrape is an error with -once, a line on
// the screen otherwise.
func runStats(args []string, stdout, stderr io.Writer) int {
	f, err := parseStatsFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	prev, prevAt, err := scrape(ctx, f.admin)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitRuntime
	}
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case <-t.C:
		}
		cur, at, err := scrape(ctx, f.admin)
		switch {
		case err != nil && f.once:
			fmt.Fprintln(stderr, err)
			return exitRuntime
		case err != nil:
			fmt.Fprintf(stdout, "\x1b[H\x1b[2J%s: %v\n", time.Now().UTC().Format(time.RFC3339), err)
			continue
		case !f.once:
			fmt.Fprint(stdout, "\x1b[H\x1b[2J")
		}
		stats.Render(stdout, f.admin, at, prev, cur, at.Sub(prevAt))
		if f.once {
			return exitOK
		}
		prev, prevAt = cur, at
	}
}

// scrape reads admin's /metrics, within 5 s.
func scrape(ctx context.Context, admin string) (stats.Snapshot, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/metrics", nil)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("strata stats: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("strata stats: %w", err)
	}
	defer resp.Body.Close()
	at := time.Now()
	if resp.StatusCode != http.StatusOK {
		return nil, at, fmt.Errorf("strata stats: %s/metrics: %s", admin, resp.Status)
	}
	s, err := stats.Parse(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, at, fmt.Errorf("strata stats: %s/metrics: %w", admin, err)
	}
	return s, at, nil
}

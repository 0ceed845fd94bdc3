// Command strata is the caching reverse proxy: the binary users run
// (built as bin/strata; the directory is cmd/proxy after DESIGN.md).
//
// It loads one YAML config (the embedded configs/default.yaml unless
// -config names a file), lets the flags override it, and wires the parts
// bottom up: the cache device (a raw block device or a preallocated file),
// the admission controller with a coarse clock it owns, the hybrid cache,
// the proxy server, a Prometheus registry, then the client listeners
// (plain and optional TLS) and the admin listener. Each listener, once
// bound, is logged as "NAME listening on SCHEME://ADDR" (port 0 works:
// the line has the port the kernel chose), which the e2e tests and `make
// demo` read.
//
// SIGTERM or SIGINT shuts down in reverse (STYLE.md rule 11): readiness
// off, stop accepting and drain in-flight requests, close the proxy (wait
// for or cancel its fills), close the cache (flush the write buffers,
// sync, close the device), stop the clock, close the admin listener; each
// step's duration is logged. The first three share limits.shutdown_timeout,
// the last two get a second each, so shutdown ends within the timeout and
// a few seconds even when the cache device never answers: the cache is
// then given up on (logged with what may be lost: what was queued for the
// device, and writes not synced) and the next start recovers the device
// as after a crash. A restart on the same device finds what was flushed.
//
// SIGHUP reloads the config file (reload.go): what a running process can
// change applies without dropping a connection or the cache, the rest is
// named and kept, and a file that does not load changes nothing. SIGUSR2
// upgrades the binary (upgrade.go): a new process started from the same
// path takes the listening sockets over, this one drains and shuts down as
// on SIGTERM, and the new one opens the device once it is released. Under
// systemd (NOTIFY_SOCKET) the process says READY=1 once serving, and
// RELOADING=1, STOPPING=1 and MAINPID= as those happen (sdnotify.go;
// configs/systemd/strata.service).
//
// `strata stats [-admin ADDR] [-once]` is the other command: a live view
// of a running node's /metrics (stats.go). strata takes no positional
// arguments otherwise, so "stats" first cannot be a config's flags.
//
// Exit status: 0 after a clean shutdown, 1 on a runtime error (a device
// that cannot be opened, a listener that cannot bind, a failed shutdown
// step, including a cache device that did not answer in time), 2 on a
// usage or config error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "stats" {
		setProcs() // the proxy's, not the stats view's (procs.go)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program: parse, load, start, wait for a signal or a
// listener failure, shut down. It returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "stats" {
		return runStats(args[1:], stdout, stderr)
	}
	f, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	cfg, parts, err := loadConfig(f)
	if f.checkConfig {
		return reportCheck(stdout, stderr, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "strata: invalid config:\n%v\n", err)
		return exitUsage
	}
	level := new(slog.LevelVar)
	logger, err := newLogger(cfg.Log, stderr, level)
	if err != nil {
		fmt.Fprintf(stderr, "strata: %v\n", err)
		return exitUsage
	}
	exe, exeErr := os.Executable() // now: an upgrade replaces the file later
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	a, err := start(cfg, parts, logger, f.pprof)
	if err != nil {
		logger.Error("strata: cannot start", "err", err)
		return exitRuntime
	}
	a.flags, a.level, a.upgrade.exe = f, level, exe
	if exeErr != nil {
		logger.Warn("strata: own path unknown: no binary upgrades (SIGUSR2)", "err", exeErr)
	}
	a.upgrade.tellParent() // a memory-only new process of an upgrade: serving now
	a.upgrade.closeInherited()
	if err := sdNotify("READY=1"); err != nil {
		logger.Warn("strata: systemd notify", "err", err)
	}
	status := a.serveUntilStop(sigs)
	// A second SIGTERM or SIGINT now kills the process the default way;
	// SIGHUP and SIGUSR2 stay caught (and ignored).
	signal.Reset(syscall.SIGTERM, syscall.SIGINT)
	if err := a.shutdown(); err != nil {
		logger.Error("strata: shutdown", "err", err)
		status = exitRuntime
	}
	return status
}

// serveUntilStop runs the signal loop until a stop: SIGTERM or SIGINT, a
// listener failure (exitRuntime), or the hand-over of a binary upgrade.
// SIGHUP reloads the config (reload.go), SIGUSR2 starts an upgrade
// (upgrade.go).
func (a *app) serveUntilStop(sigs <-chan os.Signal) int {
	for {
		select {
		case sig := <-sigs:
			switch sig {
			case syscall.SIGHUP:
				a.log.Info("strata: SIGHUP: reloading the config")
				_ = sdNotify(reloadingState())
				a.reload()
				_ = sdNotify("READY=1")
				continue
			case syscall.SIGUSR2:
				a.log.Info("strata: SIGUSR2: binary upgrade")
				if err := a.startUpgrade(); err != nil {
					a.log.Error("upgrade not started", "err", err)
				}
				continue
			}
			a.log.Info("strata: signal received, shutting down", "signal", sig.String())
			if a.upgrade.child != nil { // it would outlive us, serving on
				a.upgradeFailed(errors.New("strata: upgrade: stopped before the new process took over"))
			}
			_ = sdNotify("STOPPING=1")
			return exitOK
		case err := <-a.upgrade.answer:
			if err != nil {
				a.upgradeFailed(err)
				continue
			}
			a.handOver()
			return exitOK
		case err := <-a.serveErr:
			a.log.Error("strata: listener failed, shutting down", "err", err)
			return exitRuntime
		}
	}
}

// reportCheck prints the outcome of -check-config: "config ok", or every
// problem (one a line, with file and line) and a non-zero status.
func reportCheck(stdout, stderr io.Writer, err error) int {
	if err == nil {
		fmt.Fprintln(stdout, "config ok")
		return exitOK
	}
	fmt.Fprintln(stderr, err)
	return exitUsage
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"

	"strata/configs"
)

// flags are the command line: the overrides, the config file and
// -check-config. A FlagSet of its own, no package-level flags.
type flags struct {
	config      string
	checkConfig bool
	pprof       bool
	o           configs.Overrides
}

func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	f := &flags{}
	fs := flag.NewFlagSet("strata", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.config, "config", "", "YAML config `file` (default: the embedded configs/default.yaml)")
	fs.BoolVar(&f.checkConfig, "check-config", false, "validate the config, print every problem with its line, and exit (0: ok)")
	fs.BoolVar(&f.pprof, "pprof", false, "serve Go's profiles at /debug/pprof/ on the admin listener (for profiling; keep the admin listener private)")
	fs.StringVar(&f.o.Listen, "listen", "", "client listener `addr` (config default :8080)")
	fs.StringVar(&f.o.AdminListen, "admin-listen", "", "admin listener `addr`: /metrics, /healthz, /readyz, POST /purge (config default 127.0.0.1:9090)")
	fs.StringVar(&f.o.Origin, "origin", "", "the default origin's `URL`, http:// or https://")
	fs.StringVar(&f.o.CachePath, "cache-path", "", "cache device: a block device or a file, replacing cache.disk.devices (config default ./data/strata.cache)")
	fs.StringVar(&f.o.CacheSize, "cache-size", "", "bytes of the cache device to use, e.g. 1GiB (a file needs one; 0: a whole block device)")
	fs.StringVar(&f.o.Memory, "mem", "", "memory tier `size`, e.g. 256MiB")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: strata [flags]\n\nEach flag overrides the config.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "strata: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return nil, errors.New("strata: unexpected arguments")
	}
	return f, nil
}

// loadConfig loads the config, applies the flags, checks the files it
// names and composes each package's Options. Every problem found is in
// the returned error (configs.Problems, with file and line where known).
func loadConfig(f *flags) (*configs.Config, *configs.Parts, error) {
	data, name := configs.Default, configs.DefaultName
	if f.config != "" {
		b, err := readConfigFile(f.config)
		if err != nil {
			return nil, nil, err
		}
		data, name = b, f.config
	}
	cfg, err := configs.Load(data, name)
	if err != nil {
		return nil, nil, err
	}
	f.o.CgroupLimit = cgroupMemoryLimit()
	if err := cfg.Apply(f.o); err != nil {
		return nil, nil, err
	}
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, locate(err, data, name)
	}
	if err := cfg.CheckFiles(); err != nil {
		return nil, nil, locate(err, data, name)
	}
	parts, err := cfg.Compose(slog.Default())
	if err != nil {
		return nil, nil, locate(err, data, name)
	}
	return cfg, parts, nil
}

func readConfigFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("strata: config: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, configs.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("strata: config %s: %w", path, err)
	}
	return b, nil
}

// locate adds file and line to the Problems in err.
func locate(err error, data []byte, name string) error {
	var ps configs.Problems
	if errors.As(err, &ps) {
		return ps.Locate(data, name)
	}
	return err
}

// newLogger builds the process's logger and makes it slog's default (the
// packages that default to slog.Default log through it). The text format
// is the log package's "DATE TIME LEVEL msg k=v" line with the message
// unquoted, so "strata listening on http://ADDR" reads as it is written.
// The level is lv's (set to lc.Level), which a reload changes (setLevel).
func newLogger(lc configs.Log, w io.Writer, lv *slog.LevelVar) (*slog.Logger, error) {
	level, err := parseLevel(lc.Level)
	if err != nil {
		return nil, err
	}
	setLevel(lv, level)
	if lc.Format == "json" {
		l := slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv}))
		slog.SetDefault(l)
		return l, nil
	}
	log.SetOutput(w)
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	return slog.Default(), nil
}

func parseLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("strata: log.level %q: %w", s, err)
	}
	return level, nil
}

// setLevel sets the level of both formats: lv for JSON, and the level of
// slog's default handler (the log package bridge) for text.
func setLevel(lv *slog.LevelVar, level slog.Level) {
	lv.Set(level)
	slog.SetLogLoggerLevel(level)
}

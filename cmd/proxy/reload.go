package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"strata/configs"
)

// Reloading the config (SIGHUP).
//
// reload reads the config file again the way the start did (the same
// flags override it), and either applies it whole or changes nothing:
//
//   - A file that does not load, validate or compose (or names a file that
//     cannot be read, or a TLS pair that does not load) is refused: every
//     problem is logged, as -check-config prints it, and the running
//     config stays in force.
//   - Keys a running process cannot change (configs.Diff: the cache device
//     and memory tier, listeners, buffer-sizing limits, cluster, access
//     log, log format) keep their running values, one WARN line each
//     naming the key and why; the rest applies.
//   - What applies: the proxy's reloadable settings, swapped whole
//     (proxy.Server.Reload: origins, routing, key, HTTP policy, fill limits,
//     timeouts, purge token), the TLS certificate (read again even when its
//     file names did not change, so a renewed certificate is picked up), the
//     log level and limits.shutdown_timeout.
//
// strata_config_reloads_total{result="ok|failed"} counts reloads. reload
// runs on the signal loop's goroutine (main.go), as does shutdown, so the
// fields it changes need no lock.

// live is what reloads and binary upgrades change or use.
type live struct {
	cfg      *configs.Config // the config in force
	flags    *flags          // the command line: the config file and the overrides
	level    *slog.LevelVar  // the log level (newLogger)
	reloads  *prometheus.CounterVec
	reloadOK prometheus.Counter
	reloadNo prometheus.Counter
	certs    certs
	draining atomic.Bool // answer every response with Connection: close (upgrade.go)
	upgrade  upgradeState
}

func (l *live) init(cfg *configs.Config) {
	l.cfg = cfg
	l.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_config_reloads_total",
		Help: "Config reloads (SIGHUP) by result: ok (applied, maybe with keys that need a restart kept), failed (nothing changed)."},
		[]string{"result"})
	l.reloadOK, l.reloadNo = l.reloads.WithLabelValues("ok"), l.reloads.WithLabelValues("failed")
}

// reload reads and applies the config file; see above. It reports
// whether the new config is in force.
func (a *app) reload() bool {
	if err := a.applyConfig(); err != nil {
		a.reloadNo.Inc()
		for _, line := range strings.Split(err.Error(), "\n") {
			a.log.Error("reload: config refused, the running one stays", "problem", line)
		}
		return false
	}
	a.reloadOK.Inc()
	return true
}

func (a *app) applyConfig() error {
	if a.flags == nil || a.proxy == nil {
		return errors.New("strata: reload: not started")
	}
	cfg, parts, err := loadConfig(a.flags)
	if err != nil {
		return err
	}
	changes := configs.Diff(a.cfg, cfg)
	if kept := cfg.Keep(a.cfg, changes); len(kept) > 0 {
		for _, k := range kept {
			a.log.Warn("reload: key not applied, the running value stays (restart or upgrade to apply it)",
				"key", k.Key, "why", k.Restart)
		}
		// The running values of the kept keys beside the new values of the
		// rest: check the mixture as a whole again.
		if err := cfg.Validate(); err != nil {
			return err
		}
		if parts, err = cfg.Compose(a.log); err != nil {
			return err
		}
	}
	level, err := parseLevel(cfg.Log.Level)
	if err != nil {
		return err
	}
	var cert *tls.Certificate
	if cfg.TLS.Listen != "" {
		if cert, err = loadPair(cfg.TLS); err != nil {
			return err
		}
	}
	parts.Proxy.Logger = a.log
	if err := a.proxy.Reload(parts.Proxy); err != nil {
		return fmt.Errorf("strata: reload: %w", err)
	}
	if cert != nil {
		a.certs.cur.Store(cert)
	}
	setLevel(a.level, level)
	a.shutdownTimeout = cfg.Limits.ShutdownTimeout.D()
	a.cfg = cfg
	var applied []string
	for _, c := range changes {
		if c.Restart == "" {
			applied = append(applied, c.Key)
		}
	}
	a.log.Info("reload: config applied", "file", configName(a.flags), "changed", strings.Join(applied, ","))
	a.log.Debug("reload: in force", "origins", originURLs(cfg), "fill_timeout", cfg.Limits.FillTimeout.D(),
		"log_level", cfg.Log.Level, "purge", cfg.Admin.PurgeToken != "" || cfg.Admin.PurgeTokenFile != "")
	return nil
}

func configName(f *flags) string {
	if f.config == "" {
		return configs.DefaultName + " (embedded)"
	}
	return f.config
}

// certs holds the TLS listener's certificate, replaced whole on reload;
// handshakes read it through GetCertificate.
type certs struct {
	cur atomic.Pointer[tls.Certificate]
}

// load reads the certificate pair t names; on error the current one stays.
func (c *certs) load(t configs.TLS) error {
	cert, err := loadPair(t)
	if err != nil {
		return err
	}
	c.cur.Store(cert)
	return nil
}

func loadPair(t configs.TLS) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("strata: tls: %w", err)
	}
	return &cert, nil
}

// config is the TLS listener's tls.Config (fasthttp's ServeTLS uses Go's
// defaults too).
func (c *certs) config() *tls.Config {
	return &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return c.cur.Load(), nil
	}}
}

// closeWhenDraining wraps the client handler: while the app drains for a
// binary upgrade, every response asks its client to close the connection,
// so that busy keep-alive clients reconnect (to the new process) between
// requests instead of finding their connection closed under a request.
func (a *app) closeWhenDraining(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		h(ctx)
		if a.draining.Load() {
			ctx.SetConnectionClose()
		}
	}
}

func originURLs(cfg *configs.Config) string {
	urls := make([]string, len(cfg.Origins))
	for i, o := range cfg.Origins {
		urls[i] = o.URL
	}
	return strings.Join(urls, ",")
}

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/valyala/fasthttp"

	"strata/admission"
	"strata/blockdev"
	"strata/configs"
	"strata/hybrid"
	"strata/proxy"
)

// app is the running strata: what start built, in construction order,
// and what shutdown takes apart in reverse. It owns every goroutine it
// starts (one Serve per listener), tracked by serving.
type app struct {
	log             *slog.Logger
	shutdownTimeout time.Duration

	clock    *admission.CoarseClock
	cache    *hybrid.Cache
	proxy    *proxy.Server
	admin    *proxy.Admin
	srv      *fasthttp.Server // client listeners (plain and TLS)
	adminSrv *fasthttp.Server
	// adminGate is adminSrv's handler: the admin handler once start is
	// done, a starting answer before.
	adminGate adminGate
	adminLn   net.Listener // bound before the cache opens (listenAdmin)
	access    *accessLog   // nil when access_log.path is empty

	serving  sync.WaitGroup
	serveErr chan error // the first failure of a Serve; buffered for all

	live // what reloads and upgrades change or use (reload.go, upgrade.go)
}

// start builds everything and starts serving. On failure it closes what
// it had built and returns the error.
func start(cfg *configs.Config, p *configs.Parts, logger *slog.Logger, pprof bool) (a *app, err error) {
	a = &app{log: logger, shutdownTimeout: cfg.Limits.ShutdownTimeout.D(), serveErr: make(chan error, 3)}
	a.live.init(cfg)
	p.Cache.Disk.Logger, p.Proxy.Logger = logger, logger
	for i := range p.Devices {
		p.Devices[i].Options.Logger = logger
	}
	setMemoryLimit(logger, p.Memory)
	logger.Info("scheduler", "gomaxprocs", runtime.GOMAXPROCS(0), "cpus", runtime.NumCPU())
	defer func() {
		if err != nil {
			a.shutdown()
		}
	}()
	// The admin listener opens first: while the cache opens (a checkpoint
	// load, or a scan after a crash), /healthz says 200 and /readyz 503
	// (adminGate).
	if err := a.listenAdmin(cfg); err != nil {
		return a, err
	}
	if err := a.openCache(p); err != nil {
		return a, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(opsGauges(p)...)
	reg.MustRegister(a.reloads)
	if err := reg.Register(newCacheCollector(a.cache)); err != nil {
		return a, fmt.Errorf("strata: cache metrics: %w", err)
	}
	p.Proxy.Registerer = reg
	if a.proxy, err = proxy.New(a.cache, p.Proxy); err != nil {
		return a, err
	}
	a.admin = proxy.NewAdmin(a.proxy, reg)
	a.srv = a.proxy.HTTPServer()
	a.srv.Handler = a.closeWhenDraining(a.srv.Handler)
	if err := a.openAccessLog(cfg, reg); err != nil {
		return a, err
	}
	admin := a.admin.Handler
	if pprof {
		admin = withPprof(admin)
		logger.Info("pprof on the admin listener at /debug/pprof/")
	}
	if err := a.listen(cfg); err != nil {
		return a, err
	}
	a.adminGate.open(admin)
	a.admin.SetReady(true)
	logListening(a.log, "admin", "http", a.adminLn) // last: ready when read
	return a, nil
}

// openCache opens the devices (if any), the admission controller on a
// coarse clock, and the cache.
func (a *app) openCache(p *configs.Parts) error {
	if len(p.Devices) > 0 {
		devs, err := a.openDevices(p.Devices)
		if err != nil {
			return err
		}
		p.Cache.Devices = devs
		a.clock = admission.NewCoarseClock(0)
		p.Admission.RateLimit.Clock = a.clock
		for _, d := range devs { // the endurance budget is drive writes per day of these
			p.Admission.Fill.DeviceBytes += d.Size()
		}
		ctl, err := admission.New(p.Admission)
		if err != nil {
			closeDevices(devs)
			return err
		}
		p.Cache.Admission = ctl
	}
	t0 := time.Now()
	c, err := hybrid.Open(p.Cache) // owns the device from here, also on failure
	if err != nil {
		return err
	}
	a.cache = c
	s := c.Stats()
	a.log.Info("cache opened", "memory", configs.FormatSize(s.Memory.Capacity), "disk", s.DiskEnabled,
		"devices", len(s.DeviceOnline),
		"recovered_entries", s.Disk.Recovered, "took", time.Since(t0))
	return nil
}

// openDevices opens every cache device, in order, logging each; on
// failure it closes those it opened.
func (a *app) openDevices(parts []configs.DevicePart) ([]blockdev.Device, error) {
	var devs []blockdev.Device
	for i, dp := range parts {
		t0 := time.Now()
		dev, err := a.openDeviceWait(dp.Path, dp.Options) // waits for an old process in a binary upgrade
		if err != nil {
			closeDevices(devs)
			return nil, err
		}
		devs = append(devs, dev)
		a.log.Info("cache device opened", "path", dp.Path, "device", i, "size", configs.FormatSize(dev.Size()),
			"block_size", dev.BlockSize(), "direct", isDirect(dev), "took", time.Since(t0))
	}
	return devs, nil
}

func closeDevices(devs []blockdev.Device) {
	for _, d := range devs {
		_ = d.Close()
	}
}

// openDevice opens path as the cache device: a block device as it is, a
// file created (with its directory) at opts.Size when missing.
func openDevice(path string, opts blockdev.Options) (blockdev.Device, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("strata: cache directory: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("strata: cache device: %w", err)
	case st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice != 0:
		return nil, fmt.Errorf("strata: cache device %s is a character device; want a block device or a file", path)
	}
	dev, err := blockdev.Open(path, opts)
	if err != nil {
		return nil, fmt.Errorf("strata: cache device %s: %w", path, err)
	}
	return dev, nil
}

func isDirect(dev blockdev.Device) bool {
	d, ok := dev.(interface{ Direct() bool })
	return ok && d.Direct()
}

// listen binds every listener (so a bind failure stops the start before
// anything serves), then serves each on a goroutine of its own.
func (a *app) listen(cfg *configs.Config) error {
	type bound struct {
		name, scheme string
		ln           net.Listener
		serve        func(net.Listener) error
	}
	var lns []bound
	bind := func(name, scheme, addr string, serve func(net.Listener) error) error {
		ln, err := a.bind(name+"-"+scheme, addr)
		if err != nil {
			return fmt.Errorf("strata: %s listener: %w", name, err)
		}
		lns = append(lns, bound{name, scheme, ln, serve})
		return nil
	}
	// Server.Listener: connections that may receive 103 Early Hints.
	err := bind("strata", "http", cfg.Listen, func(ln net.Listener) error {
		return a.srv.Serve(a.proxy.Listener(ln))
	})
	if err == nil && cfg.TLS.Listen != "" {
		err = a.certs.load(cfg.TLS) // reloaded on SIGHUP (reload.go)
		if err == nil {
			err = bind("strata", "https", cfg.TLS.Listen, func(ln net.Listener) error {
				return a.srv.Serve(tls.NewListener(a.proxy.Listener(ln), a.certs.config()))
			})
		}
	}
	if err != nil {
		for _, b := range lns {
			b.ln.Close()
		}
		return err
	}
	for _, b := range lns {
		a.serve(b.name, b.scheme, b.ln, b.serve, true)
	}
	return nil
}

// logListening logs that a listener serves. Scripts and tests read these
// lines: the admin listener's comes last, once strata is ready, although
// it serves (adminGate) from before the cache opens.
func logListening(log *slog.Logger, name, scheme string, ln net.Listener) {
	log.Info(fmt.Sprintf("%s listening on %s://%s", name, scheme, ln.Addr()))
}

// listenAdmin opens the admin listener behind adminGate, before the
// cache is open.
func (a *app) listenAdmin(cfg *configs.Config) error {
	a.adminSrv = &fasthttp.Server{Handler: a.adminGate.serve, Name: "strata-admin",
		ReadTimeout: 10 * time.Second, IdleTimeout: time.Minute, CloseOnShutdown: true,
		Logger: proxy.NewPrintfLogger(a.log)}
	ln, err := a.bind("admin-http", cfg.AdminListen)
	if err != nil {
		return fmt.Errorf("strata: admin listener: %w", err)
	}
	a.adminLn = ln
	a.serve("admin", "http", ln, a.adminSrv.Serve, false)
	return nil
}

// adminGate answers the admin listener while strata starts: /healthz 200
// (the process is alive: a liveness probe must not restart it during a
// long scan), anything else 503, /readyz included; once open, the admin
// handler answers everything.
type adminGate struct {
	h atomic.Pointer[fasthttp.RequestHandler]
}

func (g *adminGate) open(h fasthttp.RequestHandler) { g.h.Store(&h) }

func (g *adminGate) serve(ctx *fasthttp.RequestCtx) {
	if h := g.h.Load(); h != nil {
		(*h)(ctx)
		return
	}
	if string(ctx.Path()) == "/healthz" {
		ctx.SetBodyString("starting\n")
		return
	}
	ctx.Error("strata: starting: the cache is not open yet\n", fasthttp.StatusServiceUnavailable)
}

// serve runs one listener; its failure (not a shutdown) is reported on
// serveErr. logged says whether to log "NAME listening on" now (see
// logListening).
func (a *app) serve(name, scheme string, ln net.Listener, serve func(net.Listener) error, logged bool) {
	a.serving.Add(1)
	if logged {
		logListening(a.log, name, scheme, ln)
	}
	go func() {
		defer a.serving.Done()
		if err := serve(ln); err != nil {
			a.serveErr <- fmt.Errorf("strata: %s listener %s: %w", name, ln.Addr(), err)
		}
	}()
}

// shutdown takes apart what start built, in reverse, logging each step.
// It is safe on a partly built app. Draining, closing the fills and
// closing the cache share one deadline, limits.shutdown_timeout from now
// (a cache device that never answers is given up on at it, see
// disk.Engine.Close); the clock and the admin listener get a second
// each, so shutdown ends within the timeout and a few seconds.
func (a *app) shutdown() error {
	var errs []error
	deadline := time.Now().Add(a.shutdownTimeout)
	step := func(name string, by time.Time, f func(ctx context.Context) error) {
		ctx, cancel := context.WithDeadline(context.Background(), by)
		defer cancel()
		t0 := time.Now()
		err := f(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			a.log.Warn("shutdown: "+name, "took", time.Since(t0), "err", err)
			return
		}
		a.log.Info("shutdown: "+name, "took", time.Since(t0))
	}
	if a.admin != nil {
		a.admin.SetReady(false)
	}
	if a.srv != nil {
		step("stop accepting and drain requests", deadline, a.srv.ShutdownWithContext)
	}
	if a.access != nil {
		step("close access log", time.Now().Add(time.Second), a.access.close)
	}
	if a.proxy != nil {
		step("close proxy (fills)", deadline, a.proxy.Close)
	}
	if a.cache != nil {
		step("write memory tier to disk", writeDownBy(deadline), a.writeDown)
		step("close cache (flush, checkpoint, sync, close device)", deadline, a.cache.Close)
	}
	if a.clock != nil {
		step("stop admission clock", time.Now().Add(time.Second), a.clock.Close)
	}
	if a.adminSrv != nil {
		step("close admin listener", time.Now().Add(time.Second), a.adminSrv.ShutdownWithContext)
	}
	if a.admin != nil {
		a.admin.Close() // stops resending purges to peers
	}
	a.serving.Wait()
	return errors.Join(errs...)
}

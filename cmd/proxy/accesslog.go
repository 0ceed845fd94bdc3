package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"strata/configs"
	"strata/proxy"
	"strata/proxy/accesslog"
)

// accessLog is the running access log: the Log, the proxy handler's hook
// that feeds it, and the goroutine that reopens it on SIGUSR1.
type accessLog struct {
	log  *accesslog.Log
	usr1 chan os.Signal
	stop chan struct{}
	done chan struct{}
}

// openAccessLog opens the access log when access_log.path is set, wraps
// the client listeners' handler with it, and starts the SIGUSR1 watcher.
func (a *app) openAccessLog(cfg *configs.Config, reg prometheus.Registerer) error {
	if cfg.AccessLog.Path == "" {
		return nil
	}
	opts := cfg.AccessLog.Options()
	opts.Registerer, opts.Logger = reg, a.log
	l, err := accesslog.Open(opts)
	if err != nil {
		return fmt.Errorf("strata: access log: %w", err)
	}
	al := &accessLog{log: l, usr1: make(chan os.Signal, 1), stop: make(chan struct{}), done: make(chan struct{})}
	a.srv.Handler = a.proxy.LoggedHandler(a.srv.Handler, logAccess{l, new(connAddrs)})
	signal.Notify(al.usr1, syscall.SIGUSR1)
	go al.watch()
	a.access = al
	a.log.Info("access log", "path", cfg.AccessLog.Path, "format", opts.Format)
	return nil
}

// watch reopens the log on each SIGUSR1 until close.
func (al *accessLog) watch() {
	defer close(al.done)
	for {
		select {
		case <-al.usr1:
			al.log.Reopen()
		case <-al.stop:
			return
		}
	}
}

// close stops the watcher, then writes what is queued and closes the file.
func (al *accessLog) close(ctx context.Context) error {
	signal.Stop(al.usr1)
	close(al.stop)
	<-al.done
	return al.log.Close(ctx)
}

// logAccess is the proxy's AccessLogger over an accesslog.Log.
type logAccess struct {
	l     *accesslog.Log
	addrs *connAddrs
}

var _ proxy.TimedAccessLogger = logAccess{}

// Timed implements proxy.TimedAccessLogger: the combined format needs no
// clock read per request (its lines show the second, from Second).
func (la logAccess) Timed() bool { return la.l.Timed() }

// Second implements proxy.TimedAccessLogger.
func (la logAccess) Second() time.Time { return la.l.Second() }

// LogAccess implements proxy.AccessLogger.
func (la logAccess) LogAccess(ctx *fasthttp.RequestCtx, r *proxy.AccessRecord) {
	e := accesslog.Entry{
		Time: r.Start, Conn: ctx.ConnID(), Method: ctx.Method(), URI: ctx.RequestURI(), Proto: ctx.Request.Header.Protocol(),
		Referer: ctx.Request.Header.Referer(), UserAgent: ctx.Request.Header.UserAgent(),
		Status: ctx.Response.StatusCode(), Bytes: bodyBytes(ctx),
		CacheStatus: r.CacheStatus, Detail: r.Detail, Tier: r.Tier,
		OriginStatus: r.OriginStatus, OriginDuration: r.OriginDuration,
	}
	if la.l.Timed() {
		e.Duration = time.Since(r.Start)
	}
	e.Remote = la.addrs.remote(ctx)
	la.l.Write(&e)
}

// bodyBytes is the body length the response sends: its Content-Length
// for a streamed body (-1, logged as "-", when it has none), nothing for
// HEAD and for statuses without a body.
func bodyBytes(ctx *fasthttp.RequestCtx) int64 {
	st := ctx.Response.StatusCode()
	if ctx.IsHead() || st < 200 || st == fasthttp.StatusNoContent || st == fasthttp.StatusNotModified {
		return 0
	}
	if ctx.Response.IsBodyStream() {
		return int64(ctx.Response.Header.ContentLength())
	}
	return int64(len(ctx.Response.Body()))
}

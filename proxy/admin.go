package proxy

import (
	"bytes"
	"crypto/subtle"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Admin serves the admin listener: GET /metrics (Prometheus exposition of
// the Gatherer), GET /healthz (the process runs), GET /readyz (200 once
// SetReady(true), 503 before and while draining), and POST /purge behind
// "Authorization: Bearer <Options.PurgeToken>" (compared in constant time;
// no token configured: 403 for everyone); with Options.Peers, a purge is
// also sent on to every peer (cluster_purge.go). See purgeRequest for /purge's
// arguments and answer.
type Admin struct {
	s       *Server
	metrics fasthttp.RequestHandler
	ready   atomic.Bool
	peers   *peers // nil: no peers, or no token to send them
}

// NewAdmin returns the admin handler of s exposing g (typically the
// prometheus.Registry given as Options.Registerer; nil: /metrics is 404).
func NewAdmin(s *Server, g prometheus.Gatherer) *Admin {
	a := &Admin{s: s}
	if g != nil {
		a.metrics = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
	token := func() string { return s.cfg().PurgeToken } // the current one: a reload may change it
	if po := s.opts.Peers; len(po.URLs) > 0 && token() != "" {
		p, err := newPeers(po, token, s.opts.Logger, s.opts.Registerer)
		if err != nil {
			s.opts.Logger.Error("proxy: purge peers off", "err", err)
		}
		a.peers = p
	} else if len(po.URLs) > 0 {
		s.opts.Logger.Error("proxy: cluster.peers set but no purge token: purges stay on this node", "peers", len(po.URLs))
	}
	if a.peers == nil {
		if _, err := newPeerMetrics(s.opts.Registerer); err != nil {
			// Without peers the strata_cluster_purge_* series are exported at
			// zero all the same, so that a fleet dashboard's queries find them
			// on every node (configs/grafana, e2e TestDashboardAndAlertSeriesExist).
			s.opts.Logger.Warn("proxy: cluster purge metrics not registered", "err", err)
		}
	}
	return a
}

// Close stops the background resending of purges to peers (queued
// resends are dropped) and waits for it. Safe to call more than once.
func (a *Admin) Close() {
	if a.peers != nil {
		a.peers.close()
	}
}

// SetReady flips /readyz; the binary sets it once listeners are up and
// clears it when draining.
func (a *Admin) SetReady(v bool) { a.ready.Store(v) }

// Handler is the fasthttp handler of the admin listener.
func (a *Admin) Handler(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/metrics":
		if a.metrics == nil {
			ctx.Error("no metrics\n", fasthttp.StatusNotFound)
			return
		}
		a.metrics(ctx)
	case "/healthz":
		ctx.SetBodyString("ok\n")
	case "/readyz":
		if !a.ready.Load() || a.s.closed.Load() {
			ctx.Error("not ready\n", fasthttp.StatusServiceUnavailable)
			return
		}
		ctx.SetBodyString("ready\n")
	case "/purge":
		a.purge(ctx)
	default:
		ctx.Error("not found\n", fasthttp.StatusNotFound)
	}
}

func (a *Admin) purge(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		ctx.Response.Header.Set("Allow", "POST")
		ctx.Error("POST only\n", fasthttp.StatusMethodNotAllowed)
		return
	}
	token := a.s.set.Load().token
	if len(token) == 0 {
		ctx.Error("purge disabled: no token configured\n", fasthttp.StatusForbidden)
		return
	}
	got, ok := bytes.CutPrefix(ctx.Request.Header.Peek("Authorization"), []byte("Bearer "))
	if !ok || subtle.ConstantTimeCompare(got, token) != 1 {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="strata"`)
		ctx.Error("unauthorized\n", fasthttp.StatusUnauthorized)
		return
	}
	a.purgeRequest(ctx)
}

package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Purge fan-out to the peers of a fleet.
//
// A purge accepted by the admin listener is applied here, then sent to
// every peer's admin listener (POST <peer>/purge, same arguments, same
// bearer token, plus headerPurgeForwarded so the peer applies it without
// sending it on: a peer list may be symmetric without ping-pong). The
// sends run concurrently, each bounded by PeerOptions.Timeout, and the
// answer lists each peer's result. A peer that could not be reached or
// answered 5xx is retried in the background by one goroutine (the
// retrier, owned by the Admin: Close stops it) with doubling intervals up
// to PeerOptions.RetryFor; past that it is given up and counted. The
// retry queue is bounded (maxPeerRetries); a purge that finds it full is
// given up at once and counted the same way.

// PeerOptions configure the purge fan-out.
type PeerOptions struct {
	// URLs are the admin listeners of the other nodes, e.g.
	// "http://10.0.0.12:9090". Empty: purges stay on this node.
	URLs []string
	// Timeout bounds one send to one peer. Default 2s.
	Timeout time.Duration
	// RetryFor is how long a failed send is retried in the background.
	// Default 5m; negative: never retried.
	RetryFor time.Duration
}

// Defaults of PeerOptions.
const (
	DefaultPeerTimeout  = 2 * time.Second
	DefaultPeerRetryFor = 5 * time.Minute
)

// EnsureDefaults fills zero fields with their defaults.
func (o *PeerOptions) EnsureDefaults() {
	setDefault(&o.Timeout, DefaultPeerTimeout)
	setDefault(&o.RetryFor, DefaultPeerRetryFor)
}

// Validate reports every peer URL that is not http(s)://host[:port].
func (o *PeerOptions) Validate() error {
	var errs []string
	for i, p := range o.URLs {
		u, err := url.Parse(p)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			errs = append(errs, fmt.Sprintf("peers[%d] %q: want http(s)://host:port", i, p))
		}
	}
	if o.Timeout <= 0 {
		errs = append(errs, "peer timeout must be positive")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(errs, "; "))
	}
	return nil
}

const (
	// headerPurgeForwarded marks a purge sent by a peer: applied, not sent on.
	headerPurgeForwarded = "Strata-Purge-Forwarded"
	maxPeerRetries       = 1024 // queued background sends
	maxPeerAnswer        = 64 << 10
	firstPeerRetry       = 500 * time.Millisecond
	maxPeerRetryInterval = 30 * time.Second
)

// peerResult is one peer's entry in the purge answer.
type peerResult struct {
	Peer     string          `json:"peer"`
	Status   int             `json:"status,omitempty"` // the peer's HTTP status; 0: no answer
	Error    string          `json:"error,omitempty"`
	Retrying bool            `json:"retrying,omitempty"` // queued for background retry
	Answer   json.RawMessage `json:"answer,omitempty"`   // the peer's own JSON answer
}

// peerJob is one purge to send to one peer.
type peerJob struct {
	peer     string
	body     []byte // form-encoded arguments
	next     time.Time
	interval time.Duration
	deadline time.Time
}

// peers sends purges to the other nodes and owns the retrier.
type peers struct {
	opts   PeerOptions
	token  func() string // the purge token now (a reload may change it)
	client *fasthttp.Client
	log    *slog.Logger
	m      *peerMetrics

	queue chan peerJob
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newPeers(opts PeerOptions, token func() string, log *slog.Logger, reg prometheus.Registerer) (*peers, error) {
	m, err := newPeerMetrics(reg)
	if err != nil {
		return nil, err
	}
	p := &peers{opts: opts, token: token, log: log, m: m,
		client: &fasthttp.Client{ReadTimeout: opts.Timeout, WriteTimeout: opts.Timeout,
			// A dialer of our own: fasthttp's default one starts a
			// process-wide goroutine that never stops.
			Dial:                dialTCP(opts.Timeout),
			MaxResponseBodySize: maxPeerAnswer, NoDefaultUserAgentHeader: true},
		queue: make(chan peerJob, maxPeerRetries), stop: make(chan struct{}), done: make(chan struct{})}
	go p.retrier()
	return p, nil
}

// dialTCP dials with a net.Dialer of bounded connect time.
func dialTCP(timeout time.Duration) fasthttp.DialFunc {
	d := &net.Dialer{Timeout: timeout}
	return func(addr string) (net.Conn, error) { return d.Dial("tcp", addr) }
}

// close stops the retrier and waits for it; queued sends are dropped.
func (p *peers) close() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
	p.client.CloseIdleConnections()
}

// send forwards the purge body to every peer at once and returns their
// results in peer order.
func (p *peers) send(body []byte) []peerResult {
	res := make([]peerResult, len(p.opts.URLs))
	var wg sync.WaitGroup
	for i, peer := range p.opts.URLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = p.sendOne(peer, body)
		}()
	}
	wg.Wait()
	now := time.Now()
	for i := range res {
		if !retryable(res[i]) {
			continue
		}
		res[i].Retrying = p.enqueue(peerJob{peer: res[i].Peer, body: body, next: now.Add(firstPeerRetry),
			interval: firstPeerRetry, deadline: now.Add(p.opts.RetryFor)})
	}
	return res
}

// retryable: no answer, or a 5xx (a draining node answers 503).
func retryable(r peerResult) bool { return r.Status == 0 || r.Status >= 500 }

func (p *peers) enqueue(j peerJob) bool {
	if p.opts.RetryFor < 0 {
		p.m.givenUp.Inc()
		return false
	}
	select {
	case p.queue <- j:
		p.m.pending.Inc()
		return true
	default:
		p.m.givenUp.Inc()
		return false
	}
}

// sendOne makes one attempt and counts it.
func (p *peers) sendOne(peer string, body []byte) peerResult {
	r := peerResult{Peer: peer}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(strings.TrimSuffix(peer, "/") + "/purge")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+p.token())
	req.Header.Set(headerPurgeForwarded, "1")
	req.SetBody(body)
	err := p.client.DoTimeout(req, resp, p.opts.Timeout)
	// An answer too long to keep still has its status: the peer applied
	// the purge, and sending it again would purge again.
	if err != nil && !errors.Is(err, fasthttp.ErrBodyTooLarge) {
		r.Error = "proxy: purge peer: " + err.Error()
		p.m.sent[peerFailed].Inc()
		return r
	}
	r.Status = resp.StatusCode()
	if b := resp.Body(); err == nil && json.Valid(b) {
		r.Answer = append(json.RawMessage(nil), b...)
	}
	switch {
	case r.Status == fasthttp.StatusOK || r.Status == fasthttp.StatusNotFound:
		p.m.sent[peerOK].Inc()
	default:
		r.Error = fmt.Sprintf("proxy: purge peer answered %d", r.Status)
		p.m.sent[peerFailed].Inc()
	}
	return r
}

// retrier resends queued purges until they succeed, stop being
// retryable, or pass their deadline.
func (p *peers) retrier() {
	defer close(p.done)
	var pending []peerJob
	tick := time.NewTicker(firstPeerRetry / 2)
	defer tick.Stop()
	for {
		q := p.queue
		if len(pending) >= maxPeerRetries {
			q = nil // full: the queue fills and enqueue gives up, counted
		}
		select {
		case <-p.stop:
			p.m.pending.Sub(float64(len(pending) + len(p.queue)))
			return
		case j := <-q:
			pending = append(pending, j)
		case now := <-tick.C:
			pending = p.retryDue(pending, now)
		}
	}
}

// retryDue sends the jobs that are due and returns those still pending.
func (p *peers) retryDue(pending []peerJob, now time.Time) []peerJob {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("proxy: purge retrier panicked", "panic", v, "stack", string(debug.Stack()))
			p.m.panics.Inc()
		}
	}()
	keep := pending[:0]
	for _, j := range pending {
		select {
		case <-p.stop: // a backlog to a dead peer must not hold shutdown
			keep = append(keep, j)
			continue
		default:
		}
		if now.Before(j.next) {
			keep = append(keep, j)
			continue
		}
		r := p.sendOne(j.peer, j.body)
		switch {
		case !retryable(r):
			p.m.pending.Dec()
			if r.Error == "" {
				p.m.retriedOK.Inc()
			} else {
				p.log.Warn("proxy: purge refused by peer", "peer", j.peer, "status", r.Status)
			}
		case now.Add(j.interval).After(j.deadline):
			p.m.pending.Dec()
			p.m.givenUp.Inc()
			p.log.Warn("proxy: purge not delivered to peer, given up", "peer", j.peer, "err", r.Error)
		default:
			j.interval = min(2*j.interval, maxPeerRetryInterval)
			j.next = now.Add(j.interval)
			keep = append(keep, j)
		}
	}
	return keep
}

// peerMetrics are the strata_cluster_purge_* metrics.
type peerMetrics struct {
	sent      [2]prometheus.Counter // by peerOK, peerFailed
	pending   prometheus.Gauge
	retriedOK prometheus.Counter
	givenUp   prometheus.Counter
	panics    prometheus.Counter
}

const (
	peerOK = iota
	peerFailed
)

func newPeerMetrics(reg prometheus.Registerer) (*peerMetrics, error) {
	sent := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_cluster_purge_sends_total",
		Help: "Purges sent to peers (first tries and background retries), by result: ok (the peer answered 200 or 404) or failed.",
	}, []string{"result"})
	m := &peerMetrics{
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_cluster_purge_retries_pending",
			Help: "Purges waiting to be sent again to a peer that failed them.",
		}),
		retriedOK: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_cluster_purge_retried_total",
			Help: "Purges delivered to a peer by a background retry.",
		}),
		givenUp: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_cluster_purge_given_up_total",
			Help: "Purges never delivered to a peer: retried for cluster.peer_retry_for, or the retry queue was full.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_cluster_purge_retrier_panics_total",
			Help: "Panics recovered in the purge retrier.",
		}),
	}
	m.sent[peerOK], m.sent[peerFailed] = sent.WithLabelValues("ok"), sent.WithLabelValues("failed")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{sent, m.pending, m.retriedOK, m.givenUp, m.panics} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// purgeForm encodes the purge arguments as a form body.
func purgeForm(urls, tags, prefixes []string) []byte {
	v := url.Values{}
	v["url"], v["tag"], v["prefix"] = urls, tags, prefixes
	return []byte(v.Encode())
}

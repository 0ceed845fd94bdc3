package proxy

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// registerS3Metrics exports the S3 origins' counters and the read-ahead's.
// They live on each s3Origin and the Server (atomics: the request path
// touches no Prometheus object) and are summed over the router's origins
// at scrape time.
func (s *Server) registerS3Metrics(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	sum := func(field func(*s3Origin) *atomic.Uint64) func() float64 {
		return func() float64 {
			// The origins of routers a reload replaced keep their
			// counts (and may still count requests they serve), so
			// that the sums never go back.
			var n uint64
			add := func(r *router) {
				for _, o := range r.all {
					if o.s3 != nil {
						n += field(o.s3).Load()
					}
				}
			}
			s.reloadMu.Lock()
			defer s.reloadMu.Unlock()
			for _, r := range s.retired {
				add(r)
			}
			add(s.set.Load().router)
			return float64(n)
		}
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_read_ahead_slices_total",
			Help: "Slices fetched from origins ahead of clients reading large objects in order.",
		}, func() float64 { return float64(s.readAheads.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_s3_throttled_total",
			Help: "Answers of S3 origins asking strata to slow down or try again (503 SlowDown, 500 InternalError and kin), retried or not.",
		}, sum(func(o *s3Origin) *atomic.Uint64 { return &o.throttled })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_s3_retries_total",
			Help: "Requests to S3 origins sent again after a throttling answer.",
		}, sum(func(o *s3Origin) *atomic.Uint64 { return &o.retries })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_s3_negative_answers_total",
			Help: "404 NoSuchKey and 403 AccessDenied answers of S3 origins, turned into short-lived cacheable negative answers.",
		}, sum(func(o *s3Origin) *atomic.Uint64 { return &o.negatives })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_s3_credential_errors_total",
			Help: "Requests S3 origins refused for strata's credentials, clock or bucket settings (SignatureDoesNotMatch, RequestTimeTooSkewed, InvalidAccessKeyId, ...).",
		}, sum(func(o *s3Origin) *atomic.Uint64 { return &o.credErrors })),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

package proxy

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// registerS3Metrics exports the S3 origins' counters and the read-ahead's:
// atomics on the Server (s3Counters, readAheads), so that the request path
// touches no Prometheus object and a reload resets nothing.
func (s *Server) registerS3Metrics(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	load := func(n *atomic.Uint64) func() float64 {
		return func() float64 { return float64(n.Load()) }
	}
	c := s.s3c
	for _, col := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_read_ahead_slices_total",
			Help: "Slices fetched from origins ahead of clients reading large objects in order.",
		}, load(&s.readAheads)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_s3_throttled_total",
			Help: "Answers of S3 origins asking strata to slow down or try again (503 SlowDown, 500 InternalError and kin), retried or not.",
		}, load(&c.throttled)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_s3_retries_total",
			Help: "Requests to S3 origins sent again after a throttling answer.",
		}, load(&c.retries)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_s3_negative_answers_total",
			Help: "404 NoSuchKey and 403 AccessDenied answers of S3 origins, turned into short-lived cacheable negative answers.",
		}, load(&c.negatives)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_s3_credential_errors_total",
			Help: "Requests S3 origins refused for strata's credentials, clock or bucket settings (SignatureDoesNotMatch, RequestTimeTooSkewed, InvalidAccessKeyId, ...).",
		}, load(&c.credErrors)),
	} {
		if err := reg.Register(col); err != nil {
			return err
		}
	}
	return nil
}

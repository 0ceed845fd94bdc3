package proxy

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metricStatus uint8

const (
	msHit metricStatus = iota
	msMiss
	msBypass
	msStale
	msError
	msCount
)

var metricStatusNames = [msCount]string{"hit", "miss", "bypass", "stale", "error"}

// metrics are the proxy's Prometheus metrics. Label children are resolved
// at construction so the request path does no map lookups. A nil
// Registerer gives unregistered metrics: counting still works (tests read
// them), nothing is exported.
type metrics struct {
	requests       [msCount]prometheus.Counter
	responseBytes  prometheus.Counter
	originDuration prometheus.Observer
	originErrors   [len(originFaults)]prometheus.Counter // by originFaults index
	inflightFills  prometheus.Gauge
	corrupt        prometheus.Counter
	cutShort       prometheus.Counter
	streamOverruns prometheus.Counter
	fillLagged     prometheus.Counter
	// backgroundRevalidations counts revalidations started behind a
	// stale-while-revalidate or grace hit.
	backgroundRevalidations prometheus.Counter
	fillDetached            prometheus.Counter
	fillsOverLimit          prometheus.Counter
	earlyHints              prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_requests_total",
		Help: "Requests answered, by cache status.",
	}, []string{"cache_status"})
	originErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_origin_errors_total",
		Help: "Origin requests that failed, by kind (timeout, truncated, framing, header_too_large, bad_content_length, too_many_1xx, malformed, throttled, s3_credentials, unreachable).",
	}, []string{"kind"})
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "strata_origin_request_duration_seconds",
		Help:    "Time from sending an origin request to its response headers.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
	})
	m := &metrics{
		responseBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_response_bytes_total",
			Help: "Body bytes sent to clients.",
		}),
		originDuration: duration,
		inflightFills: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_inflight_fills",
			Help: "Shared origin fills in progress.",
		}),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_corrupt_objects_total",
			Help: "Stored records or slices that failed to decode and were served as misses.",
		}),
		streamOverruns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_stream_budget_overruns_total",
			Help: "Responses streaming stored sliced bodies that waited their full StreamWait for room in the stream budget and streamed past it.",
		}),
		cutShort: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_responses_cut_short_total",
			Help: "Responses served from the cache that ended before their Content-Length after the status line was sent (a slice lost mid-body that could not be fetched again, an origin failing mid-fetch); the client connection is closed.",
		}),
		fillLagged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_fill_lagged_total",
			Help: "Readers cut off because they fell behind a fill and the store had dropped the bytes.",
		}),
		backgroundRevalidations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_background_revalidations_total",
			Help: "Revalidations started in the background by stale-while-revalidate or grace hits.",
		}),
		fillDetached: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_fill_detached_total",
			Help: "Readers a stored fill stopped waiting for after fill_lag_wait; they read on from the store.",
		}),
		fillsOverLimit: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_fills_over_limit_total",
			Help: "Large responses streamed unshared and not stored because max_large_fills were running.",
		}),
		earlyHints: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_early_hints_total",
			Help: "103 Early Hints responses forwarded from the origin to a fill's leading client.",
		}),
	}
	for i, name := range metricStatusNames {
		m.requests[i] = requests.WithLabelValues(name)
	}
	for i, f := range originFaults {
		m.originErrors[i] = originErrors.WithLabelValues(f.kind)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{requests, originErrors, duration, m.responseBytes, m.inflightFills, m.corrupt, m.cutShort, m.streamOverruns, m.fillLagged, m.fillDetached, m.fillsOverLimit,
		m.backgroundRevalidations, m.earlyHints} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

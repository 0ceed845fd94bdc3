package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"strata/hybrid"
)

// statMetric is one series read from hybrid.Stats at scrape time.
type statMetric struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	get  func(*hybrid.Stats) float64
}

// statsCollector exports a Cache's Stats to Prometheus: one Stats() call
// per scrape, no state of its own.
type statsCollector struct {
	stats   func() hybrid.Stats
	metrics []statMetric
}

func newStatsCollector(stats func() hybrid.Stats) *statsCollector {
	c := &statsCollector{stats: stats}
	counter := func(name, help string, get func(*hybrid.Stats) uint64) {
		c.add(name+"_total", help, prometheus.CounterValue, func(s *hybrid.Stats) float64 { return float64(get(s)) })
	}
	gauge := func(name, help string, get func(*hybrid.Stats) float64) {
		c.add(name, help, prometheus.GaugeValue, get)
	}
	counter("hybrid_memory_hits", "Memory tier lookups that found a live entry.", func(s *hybrid.Stats) uint64 { return s.Memory.Hits })
	counter("hybrid_memory_misses", "Memory tier lookups that found nothing.", func(s *hybrid.Stats) uint64 { return s.Memory.Misses })
	counter("hybrid_memory_evictions", "Entries the memory policy evicted.", func(s *hybrid.Stats) uint64 { return s.Memory.Evictions })
	gauge("hybrid_memory_entries", "Live memory tier entries.", func(s *hybrid.Stats) float64 { return float64(s.Memory.Entries) })
	gauge("hybrid_memory_bytes", "Bytes charged in the memory tier.", func(s *hybrid.Stats) float64 { return float64(s.Memory.Bytes) })
	counter("hybrid_disk_gets", "Disk tier lookups.", func(s *hybrid.Stats) uint64 { return s.Disk.Gets })
	counter("hybrid_disk_hits", "Disk tier hits.", func(s *hybrid.Stats) uint64 { return s.Disk.Hits })
	counter("hybrid_disk_inserts", "Entries offered to the disk tier.", func(s *hybrid.Stats) uint64 { return s.Disk.Inserts })
	counter("hybrid_disk_admission_rejections", "Disk inserts refused by admission.", func(s *hybrid.Stats) uint64 { return s.Disk.DropAdmission })
	counter("hybrid_disk_queue_drops", "Disk inserts dropped: queue bound reached.", func(s *hybrid.Stats) uint64 { return s.Disk.DropQueue })
	counter("hybrid_disk_read_queue_full", "Disk gets turned into misses: read queue full.", func(s *hybrid.Stats) uint64 { return s.Disk.ReadQueueFull })
	counter("hybrid_disk_reclaims", "Regions reclaimed.", func(s *hybrid.Stats) uint64 { return s.Disk.Reclaims })
	counter("hybrid_disk_corruptions", "Disk entries that failed their checks.", func(s *hybrid.Stats) uint64 { return s.Disk.Corruptions })
	counter("hybrid_disk_io_errors", "Failed device reads and writes.", func(s *hybrid.Stats) uint64 { return s.Disk.IOErrors })
	gauge("hybrid_disk_entries", "Disk index entries.", func(s *hybrid.Stats) float64 { return float64(s.Disk.Entries) })
	gauge("hybrid_disk_queued_bytes", "Bytes accepted for disk, not yet written.", func(s *hybrid.Stats) float64 { return float64(s.Disk.QueuedBytes) })
	gauge("hybrid_disk_clean_regions", "Clean regions ready for flushers.", func(s *hybrid.Stats) float64 { return float64(s.Disk.CleanRegions) })
	counter("hybrid_device_reads", "Device read calls.", func(s *hybrid.Stats) uint64 { return s.Device.Reads })
	counter("hybrid_device_writes", "Device write calls.", func(s *hybrid.Stats) uint64 { return s.Device.Writes })
	counter("hybrid_device_read_bytes", "Bytes read from the device.", func(s *hybrid.Stats) uint64 { return s.Device.ReadBytes })
	counter("hybrid_device_written_bytes", "Bytes written to the device.", func(s *hybrid.Stats) uint64 { return s.Device.WriteBytes })
	counter("hybrid_promotions", "Disk hits copied into memory.", func(s *hybrid.Stats) uint64 { return s.Promotions })
	counter("hybrid_fetches", "GetOrFetch fetches started.", func(s *hybrid.Stats) uint64 { return s.Fetches })
	counter("hybrid_fetch_waits", "GetOrFetch callers that joined a running fetch.", func(s *hybrid.Stats) uint64 { return s.FetchWaits })
	return c
}

func (c *statsCollector) add(name, help string, kind prometheus.ValueType, get func(*hybrid.Stats) float64) {
	c.metrics = append(c.metrics, statMetric{desc: prometheus.NewDesc(name, help, nil, nil), kind: kind, get: get})
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.get(&s))
	}
}

// startMetrics serves /metrics on --metrics-addr (which must be loopback)
// from a registry of its own, if --metrics. The returned stop shuts the
// server down and waits for it.
func startMetrics(cfg *config, c *hybrid.Cache, out io.Writer) (stop func(), err error) {
	if !cfg.Metrics {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(cfg.MetricsAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("hybrid-bench: --metrics-addr %q: want a loopback ip:port", cfg.MetricsAddr)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newStatsCollector(c.Stats))
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("hybrid-bench: metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(out, "hybrid-bench: metrics server: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "hybrid-bench: metrics on http://%s/metrics\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

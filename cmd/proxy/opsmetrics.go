package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"strata/configs"
)

// opsGauges are the two limits alerts and dashboards compare usage with,
// exported as constant gauges because they are fixed at start:
// strata_memory_limit_bytes (limits.memory as resolved: the config's
// value, the memory cgroup's limit, or the derived budget) for resident
// memory, and strata_disk_write_budget_bytes_per_second (the admission
// rate limit; 0 without a disk tier or with the limit off) for the disk
// write rate.
func opsGauges(p *configs.Parts) []prometheus.Collector {
	budget := float64(0)
	if len(p.Devices) > 0 && !p.Admission.RateLimit.Disabled {
		budget = float64(p.Admission.RateLimit.BytesPerSecond)
	}
	return []prometheus.Collector{
		constGauge("strata_memory_limit_bytes",
			"The memory budget: limits.memory, or the memory cgroup's limit, or the sum of strata's terms outside a cgroup.",
			float64(p.Memory.Total)),
		constGauge("strata_disk_write_budget_bytes_per_second",
			"The disk write budget (cache.disk.admission.rate); 0 without a disk tier or a rate limit.",
			budget),
	}
}

func constGauge(name, help string, v float64) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	g.Set(v)
	return g
}

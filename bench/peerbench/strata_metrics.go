package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// strataCounters are strata's own counters that say where a run's misses
// came from. The origin's request count says how many misses there were;
// these say why, so that a full run explains itself:
//   - lookups: which tier answered, and how often the disk was asked;
//   - whether the warm-up reached the disk: inserts, admission decisions
//     by reason (rate, fill; refused cold, rate, endurance), drops by
//     reason (admission, queue, too_large, expired, offline), memory
//     evictions that went down;
//   - whether what was written stayed: removes, superseded writes, reclaim
//     evictions and reinsertions, expiry;
//   - whether disk reads were lost on the way back: corruptions, hash
//     collisions, timeouts, a full read queue, I/O and write failures, a
//     device taken out of service;
//   - whether the proxy itself failed a fill: fetch and origin errors,
//     corrupt objects.
//
// Every name is one that strata's /metrics exposes
// (TestStrataCountersExist); a missing one records nothing.
var strataCounters = []string{
	// Lookups.
	"strata_cache_memory_hits_total",
	"strata_cache_memory_misses_total",
	"strata_disk_gets_total",
	"strata_disk_hits_total",
	"strata_disk_pending_hits_total",
	"strata_cache_misses_total",
	"strata_cache_promotions_total",
	// The way down.
	"strata_cache_memory_sets_total",
	"strata_cache_memory_evictions_total",
	"strata_cache_memory_expirations_total",
	"strata_cache_evicted_to_disk_total",
	"strata_cache_direct_to_disk_total",
	"strata_disk_inserts_total",
	"strata_disk_admitted_total",
	"strata_disk_admission_refused_total",
	"strata_disk_dropped_total",
	"strata_disk_written_bytes_total",
	"strata_disk_write_failed_total",
	// What was written, then lost.
	"strata_disk_removes_total",
	"strata_disk_superseded_total",
	"strata_disk_reclaims_total",
	"strata_disk_evictions_total",
	"strata_disk_reinsertions_total",
	"strata_disk_expired_on_read_total",
	// The way back.
	"strata_disk_corruptions_total",
	"strata_disk_hash_collisions_total",
	"strata_disk_read_timeouts_total",
	"strata_disk_read_queue_full_total",
	"strata_disk_io_errors_total",
	"strata_disk_device_errors_total",
	"strata_disk_out_of_service_total",
	"strata_disk_offline_gets_total",
	// Fills.
	"strata_cache_fetches_total",
	"strata_cache_fetch_errors_total",
	"strata_origin_errors_total",
	"strata_corrupt_objects_total",
}

// counterSnapshot maps a counter with its labels ("name{k=v}") to its
// value.
type counterSnapshot map[string]float64

// scrapeStrata reads strataCounters from strata's /metrics on its admin
// listener; nil if it cannot (the report then has no counters, the run
// goes on).
func scrapeStrata(ctx context.Context, admin string) counterSnapshot {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics", nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "peerbench: strata metrics: %v\n", err)
		return nil
	}
	defer resp.Body.Close()
	snap, err := parseCounters(resp.Body)
	if err != nil {
		fmt.Fprintf(os.Stderr, "peerbench: strata metrics: %v\n", err)
		return nil
	}
	return snap
}

// parseCounters picks strataCounters out of a Prometheus text exposition.
func parseCounters(r io.Reader) (counterSnapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	snap := counterSnapshot{}
	for _, name := range strataCounters {
		f, ok := fams[name]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			snap[seriesName(name, m)] += sampleValue(m)
		}
	}
	return snap, nil
}

// seriesName is name with m's labels, sorted: name{a=x,b=y}.
func seriesName(name string, m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return name
	}
	labels := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		labels = append(labels, l.GetName()+"="+l.GetValue())
	}
	slices.Sort(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// delta is after − before for every series that moved; nil when either
// scrape failed.
func delta(before, after counterSnapshot) counterSnapshot {
	if before == nil || after == nil {
		return nil
	}
	out := counterSnapshot{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// String lists the series in name order, "name=value" separated by
// spaces, with the common "strata_" prefix dropped.
func (s counterSnapshot) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%.0f", strings.TrimPrefix(k, "strata_"), s[k])
	}
	return b.String()
}

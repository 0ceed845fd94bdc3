package stats

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// view computes what Render shows from two snapshots dt apart.
type view struct {
	prev, cur Snapshot
	secs      float64
}

// rate is the per-second increase of a counter between the snapshots;
// a counter that went down (a restart) counts from zero.
func (v view) rate(name string, pairs ...string) float64 {
	if v.secs <= 0 {
		return 0
	}
	d := v.cur.Sum(name, pairs...) - v.prev.Sum(name, pairs...)
	if d < 0 {
		d = v.cur.Sum(name, pairs...)
	}
	return d / v.secs
}

// Render writes one screen: the node, then a line per subject. prev is
// the snapshot dt before cur; rates are over that interval.
func Render(w io.Writer, node string, at time.Time, prev, cur Snapshot, dt time.Duration) {
	v := view{prev: prev, cur: cur, secs: dt.Seconds()}
	fmt.Fprintf(w, "strata %s  %s  rates over %s\n\n", node, at.UTC().Format(time.RFC3339), dt.Round(time.Millisecond))
	for _, l := range []struct {
		name string
		line func(view) string
	}{
		{"requests", requestsLine}, {"hit ratio", hitLine}, {"origin", originLine}, {"fills", fillsLine},
		{"memory", memoryLine}, {"disk", diskLine}, {"disk writes", writesLine}, {"disk drops", dropsLine},
		{"errors", errorsLine},
	} {
		fmt.Fprintf(w, "%-12s %s\n", l.name, l.line(v))
	}
}

var statuses = []string{"hit", "stale", "miss", "bypass", "error"}

func requestsLine(v view) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/s", num(v.rate("strata_requests_total")))
	for _, s := range statuses {
		fmt.Fprintf(&b, "  %s %s/s", s, num(v.rate("strata_requests_total", `cache_status="`+s+`"`)))
	}
	fmt.Fprintf(&b, "  sent %s/s", bytes(v.rate("strata_response_bytes_total")))
	return b.String()
}

// hitLine: (hit + stale) / (hit + stale + miss) of the requests, and the
// cache lookups split by the tier that answered them.
func hitLine(v view) string {
	hit := v.rate("strata_requests_total", `cache_status="hit"`) + v.rate("strata_requests_total", `cache_status="stale"`)
	all := hit + v.rate("strata_requests_total", `cache_status="miss"`)
	mem, disk, miss := v.rate("strata_cache_memory_hits_total"), v.rate("strata_disk_hits_total"), v.rate("strata_cache_misses_total")
	lookups := mem + disk + miss
	return fmt.Sprintf("requests %s  lookups: memory %s  disk %s  neither %s",
		pct(hit, all), pct(mem, lookups), pct(disk, lookups), pct(miss, lookups))
}

func originLine(v view) string {
	const h = "strata_origin_request_duration_seconds"
	return fmt.Sprintf("%s/s  latency p50 %s  p99 %s  errors %s/s",
		num(v.rate(h+"_count")), seconds(v.quantile(h, 0.5)), seconds(v.quantile(h, 0.99)),
		num(v.rate("strata_origin_errors_total")))
}

func fillsLine(v view) string {
	return fmt.Sprintf("%s in flight  over limit %s/s  lagged %s/s  detached %s/s",
		num(v.cur.Sum("strata_inflight_fills")), num(v.rate("strata_fills_over_limit_total")),
		num(v.rate("strata_fill_lagged_total")), num(v.rate("strata_fill_detached_total")))
}

func memoryLine(v view) string {
	used, capa := v.cur.Sum("strata_cache_memory_used_bytes"), v.cur.Sum("strata_cache_memory_capacity_bytes")
	rss, limit := v.cur.Sum("process_resident_memory_bytes"), v.cur.Sum("strata_memory_limit_bytes")
	return fmt.Sprintf("tier %s of %s (%s)  entries %s  RSS %s of limit %s (%s)",
		bytes(used), bytes(capa), pct(used, capa), num(v.cur.Sum("strata_cache_memory_entries")),
		bytes(rss), bytes(limit), pct(rss, limit))
}

func diskLine(v view) string {
	if !v.cur.Has("strata_disk_online") {
		return "none (memory only)"
	}
	online := "yes"
	if v.cur.Sum("strata_disk_online") == 0 {
		online = "NO"
	}
	sealed, regions := v.cur.Sum("strata_disk_sealed_regions"), v.cur.Sum("strata_disk_regions")
	return fmt.Sprintf("online %s  entries %s  regions %s of %s (%s)  queued %s",
		online, num(v.cur.Sum("strata_disk_entries")), num(sealed), num(regions), pct(sealed, regions),
		bytes(v.cur.Sum("strata_disk_queued_bytes")))
}

func writesLine(v view) string {
	if !v.cur.Has("strata_disk_online") {
		return "-"
	}
	wr, budget := v.rate("strata_disk_written_bytes_total"), v.cur.Sum("strata_disk_write_budget_bytes_per_second")
	return fmt.Sprintf("%s/s of budget %s/s (%s)  inserts %s/s", bytes(wr), bytes(budget), pct(wr, budget),
		num(v.rate("strata_disk_inserts_total")))
}

// dropsLine lists strata_disk_dropped_total by reason, as exposed.
func dropsLine(v view) string {
	if !v.cur.Has("strata_disk_dropped_total") {
		return "-"
	}
	var parts []string
	for _, s := range v.cur["strata_disk_dropped_total"] {
		reason := labelValue(s.Labels, "reason")
		parts = append(parts, fmt.Sprintf("%s %s/s", reason, num(v.rate("strata_disk_dropped_total", `reason="`+reason+`"`))))
	}
	sort.Strings(parts)
	return strings.Join(parts, "  ")
}

func errorsLine(v view) string {
	s := fmt.Sprintf("origin %s/s  disk io %s/s  corrupt %s/s  read timeouts %s/s  cut short %s/s",
		num(v.rate("strata_origin_errors_total")), num(v.rate("strata_disk_io_errors_total")),
		num(v.rate("strata_disk_corruptions_total")+v.rate("strata_corrupt_objects_total")),
		num(v.rate("strata_disk_read_timeouts_total")), num(v.rate("strata_responses_cut_short_total")))
	if v.cur.Has("strata_access_log_dropped_lines_total") {
		s += fmt.Sprintf("  access log dropped %s/s", num(v.rate("strata_access_log_dropped_lines_total")))
	}
	return s
}

// quantile estimates the q-quantile of histogram h over the interval, by
// linear interpolation inside the bucket that holds it (as PromQL's
// histogram_quantile); NaN without observations.
func (v view) quantile(h string, q float64) float64 {
	type bucket struct{ le, n float64 }
	var bs []bucket
	for _, s := range v.cur[h+"_bucket"] {
		le, err := strconv.ParseFloat(labelValue(s.Labels, "le"), 64)
		if err != nil {
			continue
		}
		pair := `le="` + labelValue(s.Labels, "le") + `"`
		bs = append(bs, bucket{le, s.Value - v.prev.Sum(h+"_bucket", pair)})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].n <= 0 {
		return math.NaN()
	}
	rank := q * bs[len(bs)-1].n
	lo, below := 0.0, 0.0
	for _, b := range bs {
		if b.n >= rank {
			if math.IsInf(b.le, 1) {
				return lo
			}
			return lo + (b.le-lo)*(rank-below)/(b.n-below)
		}
		lo, below = b.le, b.n
	}
	return lo
}

// labelValue is the unescaped-as-is value of label in labels; "" if absent.
func labelValue(labels, label string) string {
	for labels != "" {
		end := closingQuote(labels)
		if end < 0 {
			return ""
		}
		k, val, _ := strings.Cut(labels[:end], "=")
		if k == label {
			return strings.Trim(val, `"`)
		}
		labels = strings.TrimPrefix(labels[end:], ",")
	}
	return ""
}

func num(x float64) string {
	switch {
	case x >= 1e6:
		return strconv.FormatFloat(x/1e6, 'f', 2, 64) + "M"
	case x >= 1e4:
		return strconv.FormatFloat(x/1e3, 'f', 1, 64) + "k"
	case x == math.Trunc(x):
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

func pct(part, whole float64) string {
	if whole <= 0 {
		return "-"
	}
	return strconv.FormatFloat(100*part/whole, 'f', 1, 64) + "%"
}

func bytes(x float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for x >= 1024 && i < len(units)-1 {
		x /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(x, 'f', 0, 64) + " B"
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + " " + units[i]
}

func seconds(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}

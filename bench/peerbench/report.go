package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"
)

// result is one system in one scenario.
type result struct {
	Scenario string `json:"scenario"`
	System   string `json:"system"`
	// Status is "ok", or why there are no figures ("not built", "failed: ...").
	Status     string `json:"status"`
	Requests   int64  `json:"requests"`
	Errors     int64  `json:"errors"`
	WarmErrors int    `json:"warm_errors"`
	// OriginRequests reached the origin during the measured run (-1:
	// unknown): near 0 in hit scenarios, else the system is not caching.
	OriginRequests int64   `json:"origin_requests"`
	RPS            float64 `json:"requests_per_s"`
	MiBps          float64 `json:"mib_per_s"`
	P50ms          float64 `json:"p50_ms"`
	P99ms          float64 `json:"p99_ms"`
	P999ms         float64 `json:"p999_ms"`
	// HitRatio is 1 - OriginRequests/Requests, clamped to [0, 1]; -1
	// when the origin's count is unknown.
	HitRatio float64 `json:"hit_ratio"`
	// CPUus is the system's CPU time (user+system of every process in its
	// tree, from /proc, sampled around the measured run) per request
	// completed; OriginCPUus the origin's (-1: unknown) and WrkCPUus the
	// load generator's, so that one can tell where the cores went.
	CPUus        float64 `json:"cpu_us_per_req"`
	OriginCPUus  float64 `json:"origin_cpu_us_per_req"`
	WrkCPUus     float64 `json:"wrk_cpu_us_per_req"`
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
	CgroupPeakMB float64 `json:"cgroup_peak_mib,omitempty"`
	// StrataWarm and StrataRun are how strata's own counters
	// (strataCounters) moved over the warm-up and over the measured run:
	// where the misses came from.
	StrataWarm counterSnapshot `json:"strata_warm_counters,omitempty"`
	StrataRun  counterSnapshot `json:"strata_run_counters,omitempty"`
	// Reference marks a yardstick (the bare handler), never a best peer.
	Reference bool `json:"reference,omitempty"`
}

// ratio is the baseline's figure over a peer's, in one scenario: RPS > 1
// and P99 < 1 mean the baseline is ahead.
type ratio struct {
	Scenario string  `json:"scenario"`
	Peer     string  `json:"peer"`
	RPS      float64 `json:"rps_ratio"`
	P99      float64 `json:"p99_ratio"`
}

// report is the whole run, as written to bench/results/.
type report struct {
	Started   time.Time         `json:"started"`
	Host      string            `json:"host"`
	Mem       string            `json:"mem"`
	Disk      string            `json:"disk"`
	Duration  string            `json:"duration"`
	Baseline  string            `json:"baseline"`
	Origin    string            `json:"origin"`  // "bin/origin URL" or "built-in URL"
	Systems   map[string]string `json:"systems"` // name -> "running", "not built", ...
	Cgroups   map[string]string `json:"cgroups"` // name -> limit, or why none
	Scenarios map[string]string `json:"scenarios"`
	Results   []result          `json:"results"`
	Ratios    []ratio           `json:"ratios"`
	Summary   []summaryRow      `json:"summary"`
}

func newResult(sc scenario, sys string, w wrkResult, cpu float64, rss, cgPeak int64) result {
	secs := float64(w.DurationUS) / 1e6
	r := result{
		Scenario: sc.ID + " " + sc.Name, System: sys, Status: "ok",
		Requests: w.Requests, Errors: w.errors(),
		RPS:   float64(w.Requests) / secs,
		MiBps: float64(w.Bytes) / secs / (1 << 20),
		P50ms: float64(w.P50US) / 1e3, P99ms: float64(w.P99US) / 1e3, P999ms: float64(w.P999US) / 1e3,
		PeakRSSMiB: float64(rss) / (1 << 20),
	}
	r.CPUus = perRequestUS(cpu, w.Requests)
	if cgPeak > 0 {
		r.CgroupPeakMB = float64(cgPeak) / (1 << 20)
	}
	return r
}

// computeRatios pairs the baseline's ok result with each peer's in every
// scenario.
func computeRatios(results []result, baseline string) []ratio {
	base := map[string]result{}
	for _, r := range results {
		if r.System == baseline && r.Status == "ok" {
			base[r.Scenario] = r
		}
	}
	var out []ratio
	for _, r := range results {
		b, ok := base[r.Scenario]
		if !ok || r.System == baseline || r.Status != "ok" || failedMost(r) {
			continue
		}
		out = append(out, ratio{Scenario: r.Scenario, Peer: r.System, RPS: div(b.RPS, r.RPS), P99: div(b.P99ms, r.P99ms)})
	}
	return out
}

// failedMost reports whether more than 1% of a run's requests failed: its
// requests/s and latencies then describe errors, and a ratio to them would
// flatter whoever is compared (n/a instead).
func failedMost(r result) bool {
	return r.Errors > 0 && r.Errors*100 > r.Requests
}

// perRequestUS is sec seconds spread over n requests, in µs (0 for none).
func perRequestUS(sec float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return sec / float64(n) * 1e6
}

// hitRatio is the share of n requests that did not reach the origin, given
// the origin saw orig of them; -1 for no requests.
func hitRatio(n, orig int64) float64 {
	if n <= 0 {
		return -1
	}
	return min(1, max(0, 1-float64(orig)/float64(n)))
}

// percent prints a ratio in [0, 1] as a percentage, "?" if negative.
func percent(r float64) string {
	if r < 0 {
		return "?"
	}
	return strconv.FormatFloat(100*r, 'f', 1, 64) + "%"
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// printTable writes one row per system and scenario, with the baseline's
// ratios on each peer's row.
func printTable(w io.Writer, rep *report) {
	rat := map[[2]string]ratio{}
	for _, r := range rep.Ratios {
		rat[[2]string{r.Scenario, r.Peer}] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\tsystem\treq/s\tMiB/s\tp50 ms\tp99 ms\tp99.9 ms\tCPU µs/req\torigin µs/req\twrk µs/req\thits\tRSS MiB\tcg MiB\terr\torigin req\t%s/x req/s\t%s/x p99\t\n",
		rep.Baseline, rep.Baseline)
	var notes []string
	for _, r := range rep.Results {
		if r.Status != "ok" {
			short := r.Status
			if len(short) > 12 {
				short = short[:12] + "…"
				notes = append(notes, fmt.Sprintf("%s / %s: %s", r.Scenario, r.System, r.Status))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", r.Scenario, r.System, short)
			continue
		}
		rs, rp := "n/a", "n/a"
		if q, ok := rat[[2]string{r.Scenario, r.System}]; ok {
			rs, rp = fmt.Sprintf("%.2fx", q.RPS), fmt.Sprintf("%.2fx", q.P99)
		} else if r.System == rep.Baseline {
			rs, rp = "-", "-"
		}
		name := r.System
		if r.Reference {
			name += " (ref)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.2f\t%.2f\t%.2f\t%.1f\t%s\t%.1f\t%s\t%.0f\t%.0f\t%d\t%s\t%s\t%s\t\n",
			r.Scenario, name, r.RPS, r.MiBps, r.P50ms, r.P99ms, r.P999ms, r.CPUus, originCPU(r.OriginCPUus),
			r.WrkCPUus, percent(r.HitRatio), r.PeakRSSMiB, r.CgroupPeakMB, r.Errors+int64(r.WarmErrors),
			originCount(r.OriginRequests), rs, rp)
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

func originCPU(us float64) string {
	if us < 0 {
		return "?"
	}
	return strconv.FormatFloat(us, 'f', 1, 64)
}

func originCount(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

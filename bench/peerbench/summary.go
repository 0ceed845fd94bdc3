package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// summaryRow is one scenario of the summary table: the baseline beside the
// best peer (highest req/s among the ok, non-reference peers), and its CPU
// per request beside the reference system's (the bare-handler ceiling). A
// ratio is 0 when either side has no figure.
type summaryRow struct {
	Scenario string `json:"scenario"`
	BestPeer string `json:"best_peer,omitempty"`
	// RPSRatio is baseline ÷ best peer; P99Ratio and CPURatio are the
	// baseline's p99 and CPU per request ÷ the same peer's.
	RPSRatio float64 `json:"rps_ratio"`
	P99Ratio float64 `json:"p99_ratio"`
	CPURatio float64 `json:"cpu_ratio"`
	// Reference ran this scenario; RefCPURatio is baseline CPU ÷ its CPU.
	Reference   string  `json:"reference,omitempty"`
	RefCPURatio float64 `json:"reference_cpu_ratio"`
}

// summarize builds one row per scenario, in the order results list them.
func summarize(results []result, baseline string) []summaryRow {
	var order []string
	by := map[string][]result{}
	for _, r := range results {
		if _, ok := by[r.Scenario]; !ok {
			order = append(order, r.Scenario)
		}
		by[r.Scenario] = append(by[r.Scenario], r)
	}
	out := make([]summaryRow, 0, len(order))
	for _, sc := range order {
		out = append(out, summarizeOne(sc, by[sc], baseline))
	}
	return out
}

func summarizeOne(sc string, rs []result, baseline string) summaryRow {
	row := summaryRow{Scenario: sc}
	var base, best, ref *result
	for i := range rs {
		r := &rs[i]
		if r.Status != "ok" || failedMost(*r) {
			continue
		}
		switch {
		case r.System == baseline:
			base = r
		case configVariant(r.System):
			// a system (the baseline or not) configured otherwise: no yardstick
		case r.Reference:
			if ref == nil {
				ref = r
			}
		case best == nil || r.RPS > best.RPS:
			best = r
		}
	}
	if best != nil {
		row.BestPeer = best.System
	}
	if ref != nil {
		row.Reference = ref.System
	}
	if base == nil {
		return row
	}
	if best != nil {
		row.RPSRatio, row.P99Ratio, row.CPURatio = div(base.RPS, best.RPS), div(base.P99ms, best.P99ms), div(base.CPUus, best.CPUus)
	}
	if ref != nil {
		row.RefCPURatio = div(base.CPUus, ref.CPUus)
	}
	return row
}

// variantOf reports whether system is baseline run with another config
// (strata-combined: strata with its access log on).
func variantOf(system, baseline string) bool {
	return strings.HasPrefix(system, baseline+"-") && configVariant(system)
}

// configVariant reports whether system is a reference that runs a peer
// with another config (strata-combined), not a yardstick of its own
// (bare, bare-proxy).
func configVariant(system string) bool {
	if s := systemByName(system); s == nil || !s.Reference {
		return false
	}
	for _, s := range allSystems {
		if !s.Reference && strings.HasPrefix(system, s.Name+"-") {
			return true
		}
	}
	return false
}

// printVariants writes, for each scenario where a variant of the baseline
// ran beside it, the variant's req/s, p99 and CPU per request ÷ the
// baseline's: what the variant's config (the access log) costs.
func printVariants(w io.Writer, rep *report) {
	base := map[string]result{}
	for _, r := range rep.Results {
		if r.System == rep.Baseline && r.Status == "ok" {
			base[r.Scenario] = r
		}
	}
	header := false
	for _, r := range rep.Results {
		b, ok := base[r.Scenario]
		if !ok || r.Status != "ok" || !variantOf(r.System, rep.Baseline) {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\n%s variants ÷ %s (the access log's cost: req/s below 1, CPU per request above 1)\n\n", rep.Baseline, rep.Baseline)
			fmt.Fprintf(w, "| scenario | variant | req/s | p99 | CPU per request |\n| --- | --- | --- | --- | --- |\n")
			header = true
		}
		fmt.Fprintf(w, "| %s | %s | %.3f× | %.2f× | %.3f× |\n", r.Scenario, r.System, div(r.RPS, b.RPS), div(r.P99ms, b.P99ms), div(r.CPUus, b.CPUus))
	}
}

// printSummary writes the summary as a Markdown table, one row per
// scenario and one column per system: req/s, p99, CPU µs per request and
// hit ratio in each cell, then the baseline ÷ best peer and the baseline's
// CPU ÷ the reference's.
func printSummary(w io.Writer, rep *report) {
	// Columns: the baseline (when it ran), the peers, then the references.
	var systems, refs []string
	if slices.ContainsFunc(rep.Results, func(r result) bool { return r.System == rep.Baseline }) {
		systems = append(systems, rep.Baseline)
	}
	cells := map[[2]string]string{}
	for _, r := range rep.Results {
		name := r.System
		if r.Reference {
			name += " (ref)"
			refs = appendNew(refs, name)
		} else {
			systems = appendNew(systems, name)
		}
		cells[[2]string{r.Scenario, name}] = cell(r)
	}
	for _, s := range refs {
		systems = appendNew(systems, s)
	}
	fmt.Fprintf(w, "\nsummary (each cell: req/s · p99 · CPU per request · hits; %s ÷ best peer: req/s, p99 and CPU against the peer with the most req/s)\n\n", rep.Baseline)
	fmt.Fprintf(w, "| scenario | %s | %s ÷ best peer | %s CPU ÷ ref |\n", strings.Join(systems, " | "), rep.Baseline, rep.Baseline)
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(systems)+3))
	for _, row := range rep.Summary {
		vals := make([]string, len(systems))
		for i, s := range systems {
			vals[i] = cells[[2]string{row.Scenario, s}]
		}
		vs := "n/a"
		if row.RPSRatio > 0 {
			vs = fmt.Sprintf("%.2f× (p99 %.2f×, CPU %.2f×) vs %s", row.RPSRatio, row.P99Ratio, row.CPURatio, row.BestPeer)
		}
		vr := "n/a"
		if row.RefCPURatio > 0 {
			vr = fmt.Sprintf("%.2f× %s", row.RefCPURatio, row.Reference)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", row.Scenario, strings.Join(vals, " | "), vs, vr)
	}
	printVariants(w, rep)
}

// cell is one system's figures in one scenario, or why there are none.
func cell(r result) string {
	if r.Status != "ok" {
		s := r.Status
		if len(s) > 24 {
			s = s[:24] + "…"
		}
		return s
	}
	c := fmt.Sprintf("%s · %s ms · %s µs · %s", kilo(r.RPS), short(r.P99ms), short(r.CPUus), percent(r.HitRatio))
	if failedMost(r) {
		c += fmt.Sprintf(" · %d errors", r.Errors)
	}
	return c
}

// kilo prints a rate as 75.3k, or whole below 1,000.
func kilo(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.1fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}

// short prints a figure with one decimal below 100, whole above.
func short(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

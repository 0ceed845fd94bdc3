package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// The targets: foyer's separated-runtime figures (foyer-rs/foyer PR #652).
const (
	targetInsertP99  = 15  // µs
	targetGetMissP99 = 100 // µs
	targetRateSlack  = 0.05
)

// compareFiles prints the Total blocks of several --json files side by
// side, then the targets for each.
func compareFiles(w io.Writer, paths []string) error {
	rs := make([]*result, len(paths))
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("hybrid-bench: %w", err)
		}
		rs[i] = &result{}
		if err := json.Unmarshal(data, rs[i]); err != nil {
			return fmt.Errorf("hybrid-bench: %s: %w", p, err)
		}
		if rs[i].Config == nil {
			return fmt.Errorf("hybrid-bench: %s: no config: not a hybrid-bench --json file", p)
		}
	}
	printCompare(w, columnNames(paths, rs), rs)
	return nil
}

// columnNames are the runtime modes, or the file names when two runs
// share a mode.
func columnNames(paths []string, rs []*result) []string {
	names := make([]string, len(rs))
	seen := map[string]bool{}
	for i, r := range rs {
		names[i] = r.Config.Runtime
		if seen[names[i]] {
			for j := range names {
				names[j] = strings.TrimSuffix(filepath.Base(paths[j]), ".json")
			}
			return names
		}
		seen[names[i]] = true
	}
	return names
}

// printCompare writes one row per block line, one column per run, then
// the memory, close time and target rows: one table, trailing blanks
// trimmed.
func printCompare(w io.Writer, names []string, rs []*result) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	cells := func(label string, cell func(i int) string) {
		fmt.Fprint(tw, label)
		for i := range rs {
			fmt.Fprint(tw, "\t", cell(i))
		}
		fmt.Fprintln(tw)
	}
	row := func(label string, cell func(*result) string) {
		cells(label, func(i int) string { return cell(rs[i]) })
	}
	empty := func(int) string { return "" }
	cells("Total", func(i int) string { return names[i] })
	lines := make([][]line, len(rs))
	for i, r := range rs {
		lines[i] = r.Total.lines()
	}
	for j, l := range lines[0] {
		cells(l.label, func(i int) string { return strings.TrimSpace(lines[i][j].value) })
	}
	row("measured", func(r *result) string { return fmt.Sprintf("%.1fs", r.Total.Seconds) })
	row("close takes", func(r *result) string { return time.Duration(r.CloseSeconds * 1e9).Round(time.Microsecond).String() })
	row("peak RSS (VmHWM)", func(r *result) string { return iec(uint64(r.RSS.PeakBytes)) })
	row("RSS bound", func(r *result) string { return iec(uint64(r.RSS.BoundBytes)) })
	row("CPU-s run / waiting for a CPU", func(r *result) string {
		return fmt.Sprintf("%.1f / %.1f", r.Noise.CPUSec, r.Noise.RunQueueSec)
	})
	row("Go sched latency p99", func(r *result) string { return fmt.Sprintf("%.0fus", r.Noise.SchedLatP99) })
	row("GC cycles, pause max", func(r *result) string {
		return fmt.Sprintf("%d, %.0fus", r.Noise.GCCycles, r.Noise.GCPauseMax)
	})
	cells("", empty)
	cells("Targets (foyer-bench)", empty)
	row(fmt.Sprintf("insert p99 ≤ %dus (separated)", targetInsertP99), func(r *result) string {
		return verdict(r.Total.InsertLat.P99 <= targetInsertP99, fmt.Sprintf("%dus", r.Total.InsertLat.P99))
	})
	row(fmt.Sprintf("get miss p99 ≤ %dus (separated)", targetGetMissP99), func(r *result) string {
		return verdict(r.Total.GetMissLt.P99 <= targetGetMissP99, fmt.Sprintf("%dus", r.Total.GetMissLt.P99))
	})
	row("disk write = limit ±5%", rateVerdict)
	row("peak RSS ≤ bound", func(r *result) string {
		return verdict(r.RSS.within(), fmt.Sprintf("%.0f%%", 100*float64(r.RSS.PeakBytes)/float64(max(r.RSS.BoundBytes, 1))))
	})
	_ = tw.Flush()
	for l := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(l, " \n"))
	}
}

func verdict(ok bool, figure string) string {
	if ok {
		return "ok " + figure
	}
	return "MISS " + figure
}

// rateVerdict compares the measured disk write rate with the admission
// limit. It holds only when the limit is below what the device sustains,
// which the JSON cannot tell: a MISS under the limit may be the device's.
func rateVerdict(r *result) string {
	limit := float64(r.Config.AdmissionRate)
	if limit <= 0 {
		return "no limit"
	}
	ratio := r.Total.DiskWriteBps / limit
	ok := ratio >= 1-targetRateSlack && ratio <= 1+targetRateSlack
	return verdict(ok, fmt.Sprintf("%.1f%% of %s/s", 100*ratio, iec(uint64(limit))))
}

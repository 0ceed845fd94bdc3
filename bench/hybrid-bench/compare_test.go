package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func compareResults() []*result {
	sep := goldenFigures()
	sep.Seconds = 30
	uni := goldenFigures()
	uni.Seconds = 30
	uni.InsertLat.P99, uni.GetMissLt.P99, uni.DiskWriteBps = 106, 531, 20<<20
	return []*result{
		{Config: &config{Runtime: "unified", AdmissionRate: 32 << 20}, Total: uni, CloseSeconds: 0.0123456,
			RSS:   rssReport{PeakBytes: 300 << 20, BoundBytes: 200 << 20},
			Noise: Noise{CPUSec: 20.04, RunQueueSec: 9.96, SchedLatP99: 812.3, GCCycles: 7, GCPauseMax: 96}},
		{Config: &config{Runtime: "separated", AdmissionRate: 500 << 20}, Total: sep, CloseSeconds: 0.002,
			RSS: rssReport{PeakBytes: 100 << 20, BoundBytes: 200 << 20}},
	}
}

const goldenCompare = `Total                             unified                   separated
disk total iops                   12647.9                   12647.9
disk total throughput             774.4 MiB/s               1.2 GiB/s
disk read iops                    11359.7                   11359.7
disk read throughput              754.4 MiB/s               754.4 MiB/s
disk write iops                   1288.3                    1288.3
disk write throughput             20.0 MiB/s                500.0 MiB/s
insert iops                       14049.9/s                 14049.9/s
insert throughput                 878.2 MiB/s               878.2 MiB/s
insert lat p50                    5us                       5us
insert lat p90                    9us                       9us
insert lat p99                    106us                     15us
insert lat p999                   26us                      26us
insert lat p9999                  56us                      56us
insert lat p99999                 317us                     317us
insert lat pmax                   659us                     659us
get iops                          35750.9/s                 35750.9/s
get miss                          60.72%                    60.72%
get throughput                    877.7 MiB/s               877.7 MiB/s
get hit lat p50                   245us                     245us
get hit lat p90                   451us                     451us
get hit lat p99                   2047us                    2047us
get hit lat p999                  2767us                    2767us
get hit lat p9999                 4703us                    4703us
get hit lat p99999                6015us                    6015us
get hit lat pmax                  6047us                    6047us
get miss lat p50                  18us                      18us
get miss lat p90                  33us                      33us
get miss lat p99                  531us                     100us
get miss lat p999                 285us                     285us
get miss lat p9999                345us                     345us
get miss lat p99999               391us                     391us
get miss lat pmax                 453us                     453us
measured                          30.0s                     30.0s
close takes                       12.346ms                  2ms
peak RSS (VmHWM)                  300.0 MiB                 100.0 MiB
RSS bound                         200.0 MiB                 200.0 MiB
CPU-s run / waiting for a CPU     20.0 / 10.0               0.0 / 0.0
Go sched latency p99              812us                     0us
GC cycles, pause max              7, 96us                   0, 0us

Targets (foyer-bench)
insert p99 ≤ 15us (separated)     MISS 106us                ok 15us
get miss p99 ≤ 100us (separated)  MISS 531us                ok 100us
disk write = limit ±5%            MISS 62.5% of 32.0 MiB/s  ok 100.0% of 500.0 MiB/s
peak RSS ≤ bound                  MISS 150%                 ok 50%
`

func TestPrintCompareGolden(t *testing.T) {
	rs := compareResults()
	var b strings.Builder
	printCompare(&b, []string{"unified", "separated"}, rs)
	if b.String() != goldenCompare {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), goldenCompare)
	}
}

func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, r := range compareResults() {
		p := filepath.Join(dir, []string{"u.json", "s.json"}[i])
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var b strings.Builder
	if err := compareFiles(&b, paths); err != nil {
		t.Fatal(err)
	}
	if b.String() != goldenCompare {
		t.Fatalf("through JSON:\n%s", b.String())
	}
	// Two runs of one mode: columns are named by file.
	b.Reset()
	if err := compareFiles(&b, []string{paths[1], paths[1]}); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); !strings.Contains(first, "s  ") || strings.Contains(first, "separated") {
		t.Fatalf("header %q", first)
	}
	bad := filepath.Join(dir, "bad.json")
	for _, content := range []string{"{", `{"total": {}}`} {
		if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := compareFiles(&b, []string{bad}); err == nil {
			t.Errorf("%q accepted", content)
		}
	}
	if err := compareFiles(&b, []string{filepath.Join(dir, "missing.json")}); err == nil {
		t.Error("missing file accepted")
	}
}

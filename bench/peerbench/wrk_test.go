package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	good := `Running 3s test @ http://127.0.0.1:1/
  Latency Distribution
     50%  1.00ms
PEERBENCH {"duration_us":3000000,"requests":30000,"bytes":31457280,"p50_us":900,"p99_us":5000,"p999_us":9000,"err_connect":0,"err_read":1,"err_write":0,"err_status":2,"err_timeout":3}
Requests/sec:  10000.00
`
	r, err := parseWrk([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 30000 || r.P999US != 9000 || r.errors() != 6 {
		t.Errorf("got %+v", r)
	}
	res := newResult(scenario{ID: "2", Name: "x"}, "nginx", r, 1.5, 64<<20, 0)
	if res.RPS != 10000 || res.MiBps != 10 || res.CPUus != 50 || res.P99ms != 5 || res.PeakRSSMiB != 64 {
		t.Errorf("newResult = %+v", res)
	}
	for name, bad := range map[string]string{
		"none":      "Requests/sec: 1\n",
		"json":      "PEERBENCH {nope\n",
		"zero-time": `PEERBENCH {"duration_us":0,"requests":1}` + "\n",
	} {
		if _, err := parseWrk([]byte(bad)); !errors.Is(err, ErrWrkOutput) {
			t.Errorf("%s: err = %v; want ErrWrkOutput", name, err)
		}
	}
}

func TestWrkArgv(t *testing.T) {
	o := Options{}
	o.EnsureDefaults()
	o.Duration = 3 * time.Second
	all := scenarios(o.Mem)
	stream := filterScenarios(all, []string{"5"})[0]
	got := strings.Join(wrkArgv(&o, "/b", "127.0.0.1:9", stream, "t"), " ")
	if !strings.Contains(got, "-t 2 -c 8 -d 3s --latency") || !strings.HasSuffix(got, "-- one /obj/256MiB?max-age=86400 1 t") {
		t.Errorf("stream argv: %s", got)
	}
	rng := filterScenarios(all, []string{"6"})[0]
	got = strings.Join(wrkArgv(&o, "/b", "127.0.0.1:9", rng, "t"), " ")
	if !strings.Contains(got, "-c 64") || !strings.HasSuffix(got, "-- range /obj/1GiB?max-age=86400 1048576 1073741824") {
		t.Errorf("range argv: %s", got)
	}
}

func TestRatios(t *testing.T) {
	rs := []result{
		{Scenario: "1", System: "strata", Status: "ok", RPS: 200, P99ms: 1},
		{Scenario: "1", System: "nginx", Status: "ok", RPS: 100, P99ms: 2},
		{Scenario: "1", System: "ats", Status: "not installed"},
		{Scenario: "1", System: "varnish-malloc", Status: "ok", RPS: 9000, P99ms: 1, Requests: 1000, Errors: 900},
		{Scenario: "2", System: "strata", Status: "not built"},
		{Scenario: "2", System: "nginx", Status: "ok", RPS: 5, P99ms: 1},
	}
	got := computeRatios(rs, "strata")
	if len(got) != 1 || got[0] != (ratio{Scenario: "1", Peer: "nginx", RPS: 2, P99: 0.5}) {
		t.Errorf("ratios = %+v", got)
	}
	var sb strings.Builder
	printTable(&sb, &report{Baseline: "strata", Results: rs, Ratios: got})
	for _, want := range []string{"2.00x", "0.50x", "not installed", "not built", "CPU µs/req"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
}

func TestSummary(t *testing.T) {
	rs := []result{
		{Scenario: "1", System: "strata", Status: "ok", RPS: 200, P99ms: 4, CPUus: 30, HitRatio: 1},
		{Scenario: "1", System: "nginx", Status: "ok", RPS: 100, P99ms: 2, CPUus: 20, HitRatio: 1},
		{Scenario: "1", System: "ats", Status: "ok", RPS: 250, P99ms: 8, CPUus: 60, HitRatio: 0.5},
		// strata with its access log on: neither a peer nor the reference.
		{Scenario: "1", System: "strata-combined", Status: "ok", RPS: 190, P99ms: 5, CPUus: 33, Reference: true},
		// A reference is never the best peer, however fast.
		{Scenario: "1", System: "bare", Status: "ok", RPS: 900, P99ms: 1, CPUus: 10, Reference: true},
		// Mostly errors: not a peer to beat.
		{Scenario: "1", System: "varnish-malloc", Status: "ok", RPS: 9000, Requests: 1000, Errors: 900},
		{Scenario: "2", System: "strata", Status: "not built"},
		{Scenario: "2", System: "nginx", Status: "ok", RPS: 5, P99ms: 1, CPUus: 7, HitRatio: -1},
	}
	got := summarize(rs, "strata")
	want := []summaryRow{
		{Scenario: "1", BestPeer: "ats", RPSRatio: 0.8, P99Ratio: 0.5, CPURatio: 0.5, Reference: "bare", RefCPURatio: 3},
		{Scenario: "2", BestPeer: "nginx"},
	}
	if len(got) != len(want) {
		t.Fatalf("summary = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v; want %+v", i, got[i], want[i])
		}
	}
	var sb strings.Builder
	printSummary(&sb, &report{Baseline: "strata", Results: rs, Summary: got})
	out := sb.String()
	for _, want := range []string{
		"| scenario | strata | nginx | ats | varnish-malloc | strata-combined (ref) | bare (ref) | strata ÷ best peer | strata CPU ÷ ref |",
		"| 1 | 200 · 4.0 ms · 30.0 µs · 100.0% | 100 · 2.0 ms · 20.0 µs · 100.0% | 250 · 8.0 ms · 60.0 µs · 50.0% |",
		"0.80× (p99 0.50×, CPU 0.50×) vs ats | 3.00× bare |",
		"| 2 | not built | 5 · 1.0 ms · 7.0 µs · ? |",
		"900 errors",
		"| 1 | strata-combined | 0.950× | 1.25× | 1.100× |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// TestSummaryOtherBaseline: with another baseline (-baseline nginx),
// strata with its access log on is still no CPU yardstick: the
// reference is the bare handler, though the log rows come first.
func TestSummaryOtherBaseline(t *testing.T) {
	rs := []result{
		{Scenario: "1a", System: "strata", Status: "ok", RPS: 200, P99ms: 4, CPUus: 30},
		{Scenario: "1a", System: "strata-combined", Status: "ok", RPS: 190, P99ms: 5, CPUus: 33, Reference: true},
		{Scenario: "1a", System: "strata-json", Status: "ok", RPS: 180, P99ms: 5, CPUus: 35, Reference: true},
		{Scenario: "1a", System: "nginx", Status: "ok", RPS: 100, P99ms: 2, CPUus: 20},
		{Scenario: "1a", System: "bare", Status: "ok", RPS: 900, P99ms: 1, CPUus: 10, Reference: true},
	}
	want := summaryRow{Scenario: "1a", BestPeer: "strata", RPSRatio: 0.5, P99Ratio: 0.5, CPURatio: 20.0 / 30,
		Reference: "bare", RefCPURatio: 2}
	if got := summarize(rs, "nginx"); len(got) != 1 || got[0] != want {
		t.Errorf("summary = %+v; want %+v", got, want)
	}
}

func TestHitRatio(t *testing.T) {
	for _, tc := range []struct {
		n, orig int64
		want    float64
	}{{100, 0, 1}, {100, 45, 0.55}, {100, 300, 0}, {0, 0, -1}} {
		if got := hitRatio(tc.n, tc.orig); got != tc.want {
			t.Errorf("hitRatio(%d, %d) = %v; want %v", tc.n, tc.orig, got, tc.want)
		}
	}
	if percent(0.55) != "55.0%" || percent(-1) != "?" {
		t.Errorf("percent: %q %q", percent(0.55), percent(-1))
	}
}

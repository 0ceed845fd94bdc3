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
	if res.RPS != 10000 || res.MiBps != 10 || res.CPUPer10k != 0.5 || res.P99ms != 5 || res.PeakRSSMiB != 64 {
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
	for _, want := range []string{"2.00x", "0.50x", "not installed", "not built"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
}

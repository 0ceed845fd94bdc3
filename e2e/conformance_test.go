package e2e

// TestConformance runs the public HTTP caching test suite (the npm package
// http-cache-tests, https://cache-tests.fyi) against strata: the suite's
// origin server and strata in front of it, both on loopback, and the
// suite's CLI client against strata. It prints the required tests passed
// per suite beside the stored baseline (conformance/baseline.json) and
// fails when a suite passes fewer than its baseline. Nothing of the suite
// is committed: `make conformance` (conformance/run.sh) installs it and
// sets STRATA_CONFORMANCE_SUITE; without that variable the test skips.
//
// Environment:
//
//	STRATA_CONFORMANCE_SUITE   the installed package's directory (required)
//	STRATA_CONFORMANCE_OUT     write the raw results and the summary there
//	STRATA_CONFORMANCE_UPDATE  =1: write the new scores as the baseline
//	STRATA_CONFORMANCE_INPROC  =1: run proxy.Server in this process (over a
//	                           memory-only hybrid.Cache) instead of the
//	                           strata binary, e.g. to bisect a difference
//
// By default strata is the real binary (startStrata: embedded default
// config, a cache file, -origin the suite's origin).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"strata/hybrid"
	"strata/proxy"
)

const conformanceBaseline = "conformance/baseline.json"

type conformanceSummary struct {
	Suites []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Required int    `json:"required"`
		Passed   int    `json:"passed"`
		Failing  []struct {
			ID, Name, Reason string
		} `json:"failing"`
	} `json:"suites"`
	Required int `json:"required"`
	Passed   int `json:"passed"`
}

func TestConformance(t *testing.T) {
	suite := os.Getenv("STRATA_CONFORMANCE_SUITE")
	if suite == "" {
		t.Skip("run by `make conformance` (STRATA_CONFORMANCE_SUITE names the installed http-cache-tests)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	here, _ := filepath.Abs("conformance")
	origin := startProcessOpts(t, procOpts{Env: []string{"npm_config_port=0", "npm_config_protocol=http",
		"npm_config_pidfile=" + filepath.Join(t.TempDir(), "origin.pid")}},
		node, filepath.Join(here, "origin.mjs"), suite)
	var base string
	if os.Getenv("STRATA_CONFORMANCE_INPROC") == "1" {
		base = startConformanceProxy(t, "http://"+origin.Addr)
	} else {
		base = startStrata(t, strataOpts{Origin: "http://" + origin.Addr}).URL // the suite appends "/config/..." itself
	}

	results := runConformanceCLI(t, node, suite, base)
	sum := summarizeConformance(t, node, suite, here, results)
	if out := os.Getenv("STRATA_CONFORMANCE_OUT"); out != "" {
		writeFile(t, filepath.Join(out, "results.json"), results)
		b, _ := json.MarshalIndent(sum, "", " ")
		writeFile(t, filepath.Join(out, "summary.json"), b)
	}
	baseline := readBaseline(t)
	fmt.Print(conformanceTable(sum, baseline))
	for _, s := range sum.Suites {
		if s.Passed < baseline[s.ID] {
			t.Errorf("conformance regression in %s: %d required tests passed, baseline %d", s.ID, s.Passed, baseline[s.ID])
		}
	}
	if os.Getenv("STRATA_CONFORMANCE_UPDATE") == "1" {
		next := map[string]int{}
		for _, s := range sum.Suites {
			next[s.ID] = s.Passed
		}
		b, _ := json.MarshalIndent(next, "", "  ")
		writeFile(t, conformanceBaseline, append(b, '\n'))
	}
}

// startConformanceProxy serves a proxy.Server in front of origin on
// 127.0.0.1:0 and returns its base URL.
func startConformanceProxy(t *testing.T, origin string) string {
	t.Helper()
	// The suite appends "/config/..." to the base URL itself.
	return startInProcess(t, hybrid.Options{}, proxy.Options{Origins: []proxy.OriginOptions{{URL: origin}}})
}

// runConformanceCLI runs the suite's CLI against base and returns its
// JSON results (test id → true or [kind, message]).
func runConformanceCLI(t *testing.T, node, suite, base string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--no-warnings", "cli.mjs")
	cmd.Dir = suite
	cmd.Env = append(os.Environ(), "npm_config_base="+base, "npm_config_id=", "npm_package_config_id=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("cache-tests CLI: %v\n%s", err, stderr.String())
	}
	t.Logf("cache-tests CLI ran in %v", time.Since(start).Round(time.Second))
	if !json.Valid(stdout.Bytes()) {
		t.Fatalf("cache-tests CLI printed no JSON:\n%s\n%s", stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

func summarizeConformance(t *testing.T, node, suite, here string, results []byte) *conformanceSummary {
	t.Helper()
	cmd := exec.Command(node, filepath.Join(here, "summary.mjs"), suite)
	cmd.Stdin = bytes.NewReader(results)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("summary.mjs: %v\n%s", err, stderr.String())
	}
	var sum conformanceSummary
	if err := json.Unmarshal(out, &sum); err != nil || len(sum.Suites) == 0 {
		t.Fatalf("summary.mjs output %q: %v", out, err)
	}
	return &sum
}

func readBaseline(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(conformanceBaseline)
	if err != nil {
		t.Fatalf("baseline: %v", err)
	}
	m := map[string]int{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("baseline %s: %v", conformanceBaseline, err)
	}
	return m
}

// conformanceTable formats the scores beside the baseline, then the
// failing required tests.
func conformanceTable(sum *conformanceSummary, baseline map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %8s %8s %8s\n", "suite", "passed", "required", "baseline")
	total := 0
	for _, s := range sum.Suites {
		mark := ""
		if s.Passed < baseline[s.ID] {
			mark = "  REGRESSION"
		}
		fmt.Fprintf(&b, "%-20s %8d %8d %8d%s\n", s.ID, s.Passed, s.Required, baseline[s.ID], mark)
		total += baseline[s.ID]
	}
	fmt.Fprintf(&b, "%-20s %8d %8d %8d\n", "total", sum.Passed, sum.Required, total)
	var fails []string
	for _, s := range sum.Suites {
		for _, f := range s.Failing {
			fails = append(fails, fmt.Sprintf("  %s: %s", f.ID, oneLine(f.Reason)))
		}
	}
	sort.Strings(fails)
	if len(fails) > 0 {
		fmt.Fprintf(&b, "failing required tests:\n%s\n", strings.Join(fails, "\n"))
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

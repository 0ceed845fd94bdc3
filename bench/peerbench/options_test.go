package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsAndDefaults(t *testing.T) {
	o, err := parseFlags([]string{"-mem", "32MiB", "-disk", "1GiB", "-scenarios", "1, 3", "-systems", "nginx,ats", "-duration", "3s"})
	if err != nil {
		t.Fatal(err)
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Mem != 32<<20 || o.Disk != 1<<30 || o.Duration != 3*time.Second || o.Connections != 64 || o.Threads != 2 {
		t.Errorf("got %+v", o)
	}
	if strings.Join(o.Scenarios, "|") != "1|3" || strings.Join(o.Systems, "|") != "nginx|ats" {
		t.Errorf("lists: %v %v", o.Scenarios, o.Systems)
	}
	empty, err := parseFlags([]string{"-scenarios", ""})
	if err != nil || len(empty.Scenarios) != 0 {
		t.Errorf("empty -scenarios (make's SCENARIOS unset) = %v, %v; want all", empty.Scenarios, err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	o := Options{Mem: 1, Disk: 1, Cgroup: 1, Duration: time.Hour, Systems: []string{"squid"}, Scenarios: []string{"9"}}
	o.EnsureDefaults()
	err := o.Validate()
	if !errors.Is(err, ErrOptions) {
		t.Fatalf("Validate = %v; want ErrOptions", err)
	}
	for _, want := range []string{"-mem", "-disk", "-cgroup", "-duration", "squid", `"9"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestSelectScenarios(t *testing.T) {
	ids := func(scs []scenario) string {
		var out []string
		for _, s := range scs {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		sel  []string
		want string
	}{
		{nil, "1a,1b,2,3,4,5,6,7"},
		{[]string{"1"}, "1a,1b"},
		{[]string{"1b", "6"}, "1b,6"},
		{[]string{"3", "1"}, "1a,1b,3"},
		{[]string{"7"}, "7"},
		{[]string{"8"}, ""},
	} {
		if got := ids(selectScenarios(tc.sel)); got != tc.want {
			t.Errorf("selectScenarios(%v) = %q; want %q", tc.sel, got, tc.want)
		}
	}
}

func TestWorkingSetIsFourTimesMem(t *testing.T) {
	for _, mem := range []int64{16 << 20, 64 << 20} {
		sc := filterScenarios(scenarios(mem), []string{"3"})[0]
		if got := sc.Count * workingSetObject; got != 4*mem {
			t.Errorf("mem %d: working set %d; want %d", mem, got, 4*mem)
		}
		if int64(len(sc.Warm)) != sc.Count {
			t.Errorf("mem %d: warm-up covers %d of %d URLs", mem, len(sc.Warm), sc.Count)
		}
	}
}

// TestLargeSet: scenario 7 is 256 KiB objects over a set of 8x mem (8,192
// URLs, 2 GiB, at the default 256 MiB), every URL warmed once, none shared
// with scenario 2's 256 KiB URLs.
func TestLargeSet(t *testing.T) {
	o := Options{}
	o.EnsureDefaults()
	all := scenarios(o.Mem)
	sc := filterScenarios(all, []string{"7"})[0]
	if sc.Count != 8192 || sc.Count*largeSetObject != 2<<30 || int64(len(sc.Warm)) != sc.Count {
		t.Errorf("count %d, warm %d; want 8192 URLs, 2 GiB, each warmed", sc.Count, len(sc.Warm))
	}
	if o.Cgroup != 1<<30 || o.Mem != 256<<20 || o.Disk != 4<<30 {
		t.Errorf("budgets %d/%d/%d; want the published 256MiB mem, 4GiB disk, 1GiB cgroup", o.Mem, o.Disk, o.Cgroup)
	}
	hits := filterScenarios(all, []string{"2"})[0]
	seen := map[string]bool{}
	for _, u := range hits.Warm {
		seen[u] = true
	}
	for _, u := range sc.Warm {
		if seen[u] || !strings.HasPrefix(u, sc.Path+"&k=") {
			t.Fatalf("warm URL %q: shared with scenario 2 or not under %q", u, sc.Path)
		}
	}
}

package main

import (
	"fmt"
	"strings"
)

// scenario is one workload of the peer comparison, run against every system in turn
// after the same warm-up. Paths are the sample origin's: /obj/<size>?max-age=N.
type scenario struct {
	ID, Name, Desc string
	// Mode, Path and Count are bench/wrk/bench.lua's arguments.
	Mode  string
	Path  string
	Count int64
	// Object is the object size of a range scenario (the Lua's 4th argument).
	Object int64
	// Connections overrides Options.Connections when non-zero.
	Connections int
	// Warm lists the URLs GETted once, whole, before the measured run.
	Warm []string
}

// ttl of every object: longer than any run.
const ttlQuery = "?max-age=86400"

// workingSetObject is scenario 3's object size.
const workingSetObject = 64 << 10

// largeSetObject is scenario 7's object size.
const largeSetObject = 256 << 10

// scenarios builds the list for a memory budget: scenario 3's working set
// is four times mem, scenario 7's set eight times (2 GiB of 256 KiB
// objects over 8,192 URLs at the default 256 MiB), warmed once, so that
// most hits must come from the disk tier and its hit ratio says how much
// of the set each system kept.
func scenarios(mem int64) []scenario {
	ws := 4 * mem / workingSetObject
	ls := 8 * mem / largeSetObject
	large := randomScenario("7", "set-8x-256k",
		fmt.Sprintf("256 KiB objects over %d URLs (%s set, 8x mem), warmed once", ls, formatSize(ls*largeSetObject)),
		"/obj/256k", ls)
	// Its own URLs: scenario 2's /obj/256k keys must not count as warm.
	large.Path = "/obj/256k" + ttlQuery + "&set=8x"
	for i := range large.Warm {
		large.Warm[i] = fmt.Sprintf("%s&k=%d", large.Path, i)
	}
	return []scenario{
		{ID: "1a", Name: "hot-1k-one", Desc: "1 KiB hits, one URL",
			Mode: "one", Path: "/obj/1k" + ttlQuery, Count: 1, Warm: repeat("/obj/1k"+ttlQuery, 3)},
		randomScenario("1b", "hot-1k-1000", "1 KiB hits, 1,000 URLs at random", "/obj/1k", 1000),
		randomScenario("2", "hits-256k", "256 KiB hits, 64 URLs at random", "/obj/256k", 64),
		randomScenario("3", "working-set-4x", fmt.Sprintf("64 KiB objects, working set 4x mem (%d URLs)", ws), "/obj/64k", ws),
		{ID: "4", Name: "misses", Desc: "1 KiB, every URL unique (all misses)",
			Mode: "unique", Path: "/obj/1k" + ttlQuery, Count: 1, Warm: uniqueWarm("/obj/1k"+ttlQuery, 16)},
		{ID: "5", Name: "stream-256m", Desc: "one 256 MiB object read whole by 8 clients",
			Mode: "one", Path: "/obj/256MiB" + ttlQuery, Count: 1, Connections: 8, Warm: []string{"/obj/256MiB" + ttlQuery}},
		{ID: "6", Name: "ranges-1g", Desc: "random 1 MiB ranges of a 1 GiB object",
			Mode: "range", Path: "/obj/1GiB" + ttlQuery, Count: 1 << 20, Object: 1 << 30, Warm: []string{"/obj/1GiB" + ttlQuery}},
		large,
	}
}

func randomScenario(id, name, desc, obj string, n int64) scenario {
	warm := make([]string, 0, n)
	for i := range n {
		warm = append(warm, fmt.Sprintf("%s%s&k=%d", obj, ttlQuery, i))
	}
	return scenario{ID: id, Name: name, Desc: desc, Mode: "random", Path: obj + ttlQuery, Count: n, Warm: warm}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func uniqueWarm(path string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s&u=warm-%d", path, i)
	}
	return out
}

// selectScenarios keeps the scenarios whose id matches a selector: "1"
// matches 1a and 1b, "1b" only itself. No selector keeps all.
func selectScenarios(sel []string) []scenario {
	all := scenarios(64 << 20)
	if len(sel) == 0 {
		return all
	}
	var out []scenario
	for _, sc := range all {
		for _, s := range sel {
			if sc.ID == s || strings.TrimRight(sc.ID, "abcdefgh") == s {
				out = append(out, sc)
				break
			}
		}
	}
	return out
}

// filterScenarios is selectScenarios over a list built for the real mem.
func filterScenarios(all []scenario, sel []string) []scenario {
	keep := map[string]bool{}
	for _, sc := range selectScenarios(sel) {
		keep[sc.ID] = true
	}
	var out []scenario
	for _, sc := range all {
		if keep[sc.ID] {
			out = append(out, sc)
		}
	}
	return out
}

// wrkArgs are the Lua script's arguments for one run; tag makes unique
// URLs unique across systems and runs.
func (sc scenario) wrkArgs(tag string) []string {
	extra := tag
	if sc.Mode == "range" {
		extra = fmt.Sprint(sc.Object)
	}
	return []string{sc.Mode, sc.Path, fmt.Sprint(sc.Count), extra}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/hybrid/memory"
)

// TestSweep compares S3-FIFO with otter beyond the table of `go run .`:
// Zipf 0.9 with and without scans at six sizes, and a drifting Zipf (the
// hot ids shift by one every 10 requests, so recency matters), over three
// seeds (STRATA_LONG: one seed, 3M requests). otter's figures vary between
// runs, so each is the mean of three replays, cached in a temp file keyed
// by row; delete the file to measure again. Opt-in, it takes minutes:
//
//	STRATA_SWEEP=1 go test -run Sweep -v .
func TestSweep(t *testing.T) {
	if os.Getenv("STRATA_SWEEP") == "" {
		t.Skip("opt-in (minutes): STRATA_SWEEP=1 go test -run Sweep -v .")
	}
	const keys = 100_000
	pcts := []float64{0.5, 1, 2, 5, 10, 20}
	seeds := []uint64{42, 7, 1234}
	reqs := 1_000_000
	if os.Getenv("STRATA_LONG") != "" {
		seeds, reqs = []uint64{99}, 3_000_000
	}
	ref := map[string]float64{}
	refFile := filepath.Join(os.TempDir(), "strata_otter_ref.json")
	if b, err := os.ReadFile(refFile); err == nil {
		json.Unmarshal(b, &ref)
	}
	var sb strings.Builder
	minM, sumM, n := 1.0, 0.0, 0
	for _, wl := range []struct {
		name string
		scan int
	}{{"zipf", 0}, {"scan", keys / 10}, {"drift", -1}} {
		for _, pct := range pcts {
			if wl.scan < 0 && pct != 1 && pct != 10 {
				continue
			}
			rowS, rowO := 0.0, 0.0
			for _, seed := range seeds {
				var tr []int
				if wl.scan < 0 {
					tr = traceSeed(keys, reqs, 0.9, 0, seed)
					for i := range tr {
						tr[i] = (tr[i] + i/10) % (4 * keys) // popularity drifts: hot ids shift by one every 10 requests
					}
				} else {
					tr = traceSeed(keys, reqs, 0.9, wl.scan, seed)
				}
				size := int(float64(keys) * pct / 100)
				id := fmt.Sprintf("%s/%g/%d/%d", wl.name, pct, seed, reqs)
				o, ok := ref[id]
				if !ok {
					o = (hitRatio(newOtter(size), tr) + hitRatio(newOtter(size), tr) + hitRatio(newOtter(size), tr)) / 3
					ref[id] = o
				}
				s := hitRatio(newStrata(size, memory.S3FIFO), tr)
				rowS += s / float64(len(seeds))
				rowO += o / float64(len(seeds))
				m := s - o
				minM = min(minM, m)
				sumM += m
				n++
			}
			fmt.Fprintf(&sb, "%s %5g%%: strata %.4f otter %.4f  %+.4f\n", wl.name, pct, rowS, rowO, rowS-rowO)
		}
	}
	b, _ := json.Marshal(ref)
	os.WriteFile(refFile, b, 0o644)
	fmt.Printf("%sstrata-otter per seed: min %+.4f mean %+.4f\n", sb.String(), minM, sumM/float64(n))
}

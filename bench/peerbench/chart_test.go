package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteChart(t *testing.T) {
	dir := t.TempDir()
	for name, rats := range map[string][]ratio{
		"empty": nil,
		"some": {
			{Scenario: "1a hot-1k-one", Peer: "nginx", RPS: 1.2}, {Scenario: "1a hot-1k-one", Peer: "ats", RPS: 0.8},
			{Scenario: "3 working-set-4x", Peer: "nginx", RPS: 2.5},
		},
	} {
		path := filepath.Join(dir, name+".png")
		if err := writeChart(path, &report{Baseline: "strata", Mem: "64MiB", Disk: "2GiB", Ratios: rats}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: not a PNG (%v)", name, err)
		}
	}
}

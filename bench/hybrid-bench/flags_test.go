package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsDefaults(t *testing.T) {
	c, err := parseFlags([]string{"--file", "/x/dev"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// foyer-bench's defaults.
	if c.Mem != 1<<30 || c.Disk != 1<<30 || c.RegionSize != 64<<20 || c.GetRange != 10000 ||
		c.Flushers != 4 || c.Reclaimers != 4 || c.Time != 60 || c.WarmUp != 2 || c.ReportInterval != 2 ||
		c.Writers != 16 || c.Readers != 16 || c.EntryMin != 64<<10 || c.EntryMax != 64<<10 ||
		c.Runtime != "disabled" || c.Eviction != "lru" || c.Distribution != "uniform" || c.ZipfS != 0.5 ||
		c.Latency != 0 || c.AdmissionRate != 0 || c.WRate != 0 {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name  string
		args  string
		check func(*config) bool
	}{
		{"double dash, space", "--file f --mem 64MiB --disk 1GiB --region-size 16MiB",
			func(c *config) bool { return c.Mem == 64<<20 && c.Disk == 1<<30 && c.RegionSize == 16<<20 }},
		{"double dash, equals", "--file=f --mem=64MiB --writers=3 --runtime=separated",
			func(c *config) bool { return c.Mem == 64<<20 && c.Writers == 3 && c.Runtime == "separated" }},
		{"rates", "--file f --w-rate 4MiB --r-rate 32MiB/s --admission-rate-limit 500MiB",
			func(c *config) bool { return c.WRate == 4<<20 && c.RRate == 32<<20 && c.AdmissionRate == 500<<20 }},
		{"entry sizes", "--file f --entry-size-min 2KiB --entry-size-max 64KiB",
			func(c *config) bool { return c.EntryMin == 2<<10 && c.EntryMax == 64<<10 }},
		{"runtime workers", "--file f --runtime unified --read-runtime-workers 8 --write-runtime-workers 4",
			func(c *config) bool { return c.ReadWorkers == 8 && c.WriteWorkers == 4 }},
		{"old worker flag names", "--file f --read-runtime-worker-threads 8 --write-runtime-worker-threads 2",
			func(c *config) bool { return c.ReadWorkers == 8 && c.WriteWorkers == 2 }},
		{"zipf", "--file f --distribution zipf --distribution-zipf-s 0.9",
			func(c *config) bool { return c.Distribution == "zipf" && c.ZipfS == 0.9 }},
		{"latency ms", "--file f --latency 5",
			func(c *config) bool { return c.Latency == 5*time.Millisecond }},
		{"latency duration", "--file f --latency 500us",
			func(c *config) bool { return c.Latency == 500*time.Microsecond }},
		{"bools", "--no-disk --metrics --eviction s3fifo",
			func(c *config) bool { return c.NoDisk && c.Metrics && c.Eviction == "s3fifo" }},
		{"times", "--file f --time 30 --warm-up 0 --report-interval 5 --get-range 100",
			func(c *config) bool {
				return c.Time == 30 && c.WarmUp == 0 && c.ReportInterval == 5 && c.GetRange == 100
			}},
		{"compare", "--compare a.json b.json",
			func(c *config) bool { return c.Compare && len(c.CompareFiles) == 2 && c.CompareFiles[1] == "b.json" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(strings.Fields(tc.args), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("%+v", c)
			}
		})
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		args string
		want []string // every one must appear in the error
	}{
		{"", []string{"exactly one of --file and --no-disk"}},
		{"--file f --no-disk", []string{"exactly one of"}},
		{"--file f --mem 64", []string{"--mem 64: give a unit", "64MiB"}},
		{"--file f --w-rate 4 --disk 1048576", []string{"--w-rate 4", "--disk 1048576"}},
		{"--file f --mem 64XB", []string{"--mem"}},
		{"--file f --runtime fast --eviction lfu --distribution none",
			[]string{`--runtime "fast"`, `--eviction "lfu"`, `--distribution "none"`}},
		{"--file f --entry-size-min 64KiB --entry-size-max 2KiB", []string{"--entry-size-min"}},
		{"--file f --time 0", []string{"--time 0"}},
		{"--file f --writers 0 --get-range 0", []string{"--writers 0", "--get-range"}},
		{"--file f --latency -3", []string{"--latency"}},
		{"--file f --latency soon", []string{"--latency"}},
		{"--file f --distribution-zipf-s 0", []string{"--distribution-zipf-s"}},
		{"--file f --disk 4097B", []string{"multiple of 4096"}},
		{"--file f extra", []string{"unexpected arguments"}},
		{"--compare", []string{"--compare needs JSON files"}},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			_, err := parseFlags(strings.Fields(tc.args), io.Discard)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseFlagsUnknownAndHelp(t *testing.T) {
	if _, err := parseFlags([]string{"--no-such-flag"}, io.Discard); err == nil {
		t.Fatal("unknown flag accepted")
	}
	var out strings.Builder
	if _, err := parseFlags([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(out.String(), "-admission-rate-limit") {
		t.Fatalf("usage lacks flags:\n%s", out.String())
	}
}

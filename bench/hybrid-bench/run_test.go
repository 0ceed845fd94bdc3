package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunEndToEnd runs the bench for 2 s on a temporary file and checks
// its text output and its JSON.
func TestRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2 s")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	args := "--file " + filepath.Join(dir, "dev") + " --mem 2MiB --disk 16MiB --region-size 1MiB --buffer-size 256KiB" +
		" --flushers 1 --reclaimers 1 --entry-size-min 1KiB --entry-size-max 16KiB --get-range 400" +
		" --writers 2 --readers 2 --w-rate 2MiB --r-rate 4MiB --admission-rate-limit 1MiB" +
		" --time 2 --warm-up 0 --report-interval 1 --runtime separated --latency 1 --metrics --metrics-addr 127.0.0.1:0" +
		" --json " + jsonPath + " --cpuprofile " + filepath.Join(dir, "cpu.prof")
	cfg, err := parseFlags(strings.Fields(args), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := run(cfg, &out, false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"[1s/2s]\ndisk total iops: ", "[2s/2s]\n", "\nTotal:\ndisk total iops: ", "\nClose takes: ", "Peak RSS (VmHWM): "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	_, total, _ := strings.Cut(text, "\nTotal:\n")
	block, _, _ := strings.Cut(total, "\n\nClose takes: ")
	if lines := strings.Split(block, "\n"); len(lines) != 32 || !regexp.MustCompile(`^get miss: \d+\.\d\d% $`).MatchString(lines[16]) {
		t.Errorf("Total block: %d lines, line 17 %q:\n%s", len(lines), lines[min(16, len(lines)-1)], block)
	}
	if strings.Contains(text, "\r") {
		t.Error("progress line printed without a terminal")
	}

	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	tot := r.Total
	if len(r.Intervals) != 2 || r.Config.Runtime != "separated" || tot.Seconds < 1.9 || tot.Seconds > 3 {
		t.Fatalf("intervals %d, config %+v, seconds %v", len(r.Intervals), r.Config, tot.Seconds)
	}
	if tot.Inserts == 0 || tot.Gets == 0 || tot.InsertLat.Max == 0 || tot.DiskWriteBps == 0 || tot.Corrupt != 0 || tot.Errors != 0 {
		t.Fatalf("total %+v", tot)
	}
	if sum := r.Intervals[0].Inserts + r.Intervals[1].Inserts; sum != tot.Inserts {
		t.Fatalf("intervals' inserts %d, total %d", sum, tot.Inserts)
	}
	if r.RSS.PeakBytes == 0 || r.RSS.FlushBuffers != 2*256<<10 || !r.Cache.DiskEnabled || r.Cache.Disk.Inserts == 0 {
		t.Fatalf("rss %+v, cache disk %+v", r.RSS, r.Cache.Disk)
	}
	if st, err := os.Stat(filepath.Join(dir, "cpu.prof")); err != nil || st.Size() == 0 {
		t.Fatalf("cpu profile: %v", err)
	}
}

func TestRunMemoryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1 s")
	}
	cfg, err := parseFlags(strings.Fields("--no-disk --mem 4MiB --entry-size-min 100B --entry-size-max 1KiB"+
		" --writers 1 --readers 1 --w-rate 1MiB --r-rate 1MiB --get-range 1000 --time 1 --warm-up 0"+
		" --distribution zipf --eviction s3fifo"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r, err := run(cfg, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Total.Inserts == 0 || r.Total.Gets == 0 || r.Total.DiskWriteBps != 0 || r.Cache.DiskEnabled {
		t.Fatalf("%+v", r.Total)
	}
}

func TestRunRefusesBadDevice(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseFlags(strings.Fields("--file "+filepath.Join(dir, "no", "such", "dir", "dev")+" --disk 16MiB"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(cfg, io.Discard, false); err == nil {
		t.Fatal("opened a device in a missing directory")
	}
}

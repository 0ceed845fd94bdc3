package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCountersAndDelta(t *testing.T) {
	before := `# TYPE strata_disk_dropped_total counter
strata_disk_dropped_total{reason="queue"} 3
strata_disk_dropped_total{reason="rate"} 1
# TYPE strata_disk_hits_total counter
strata_disk_hits_total 10
# TYPE strata_other_total counter
strata_other_total 99
`
	after := `# TYPE strata_disk_dropped_total counter
strata_disk_dropped_total{reason="queue"} 3
strata_disk_dropped_total{reason="rate"} 5
# TYPE strata_disk_hits_total counter
strata_disk_hits_total 25
# TYPE strata_disk_read_timeouts_total counter
strata_disk_read_timeouts_total 2
`
	b, err := parseCounters(strings.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b["strata_other_total"]; ok {
		t.Error("a counter not in strataCounters was kept")
	}
	a, err := parseCounters(strings.NewReader(after))
	if err != nil {
		t.Fatal(err)
	}
	d := delta(b, a)
	want := "disk_dropped_total{reason=rate}=4 disk_hits_total=15 disk_read_timeouts_total=2"
	if got := d.String(); got != want {
		t.Errorf("delta = %q, want %q", got, want)
	}
	if delta(nil, a) != nil {
		t.Error("delta with a failed scrape is not nil")
	}
}

// TestStrataCountersExist: every name peerbench records is one strata
// registers (a quoted literal in its non-test sources outside bench/), so
// a renamed or misspelt counter fails here rather than vanishing from the
// report.
func TestStrataCountersExist(t *testing.T) {
	root := filepath.Join("..", "..")
	var src strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bench" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		src.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range strataCounters {
		if !strings.Contains(src.String(), `"`+name+`"`) {
			t.Errorf("%s: no strata source registers it", name)
		}
	}
}

package main

import (
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

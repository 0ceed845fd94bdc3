package fio

import "testing"

const sample = `note: both iodepth >= 1 and synchronous I/O engine are selected
{"jobs": [{"error": 0, "usr_cpu": 2.0, "sys_cpu": 8.0, "job_runtime": 2000,
 "read": {"io_bytes": 4096000, "bw_bytes": 2048000, "iops": 500, "runtime": 2000,
  "lat_ns": {"mean": 1500.5}, "clat_ns": {"percentile": {"50.000000": 1200}}},
 "write": {"io_bytes": 0}}]}`

func TestParse(t *testing.T) {
	r, err := Parse([]byte(sample), false)
	if err != nil {
		t.Fatal(err)
	}
	// CPU: 10% of 2 s = 200 ms over 500 IOPS * 2 s = 1000 I/Os.
	if r.BW != 2048000 || r.IOPS != 500 || r.Mean != 1500.5 || r.P50 != 1200 || r.Bytes != 4096000 || r.CPUPerOpNs != 200e3 {
		t.Fatalf("%+v", r)
	}
	if w, err := Parse([]byte(sample), true); err != nil || w.BW != 0 || w.IOPS != 0 {
		t.Fatalf("write side: %+v, %v", w, err)
	}
	for _, bad := range []string{"", "{", `{"jobs": []}`, `{"jobs": [{"error": 5}]}`} {
		if _, err := Parse([]byte(bad), true); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Fuzz(func(t *testing.T, b []byte) {
		Parse(b, false) // must not panic
	})
}

package main

import "testing"

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: error
	}{
		{"4096", 4096}, {"1GiB", 1 << 30}, {"512MiB", 512 << 20}, {"64k", 64 << 10}, {"2G", 2 << 30},
		{"1TB", 1 << 40}, {"", 0}, {"GiB", 0}, {"-1M", 0}, {"1.5G", 0}, {"0", 0},
	}
	for _, tc := range tests {
		got, err := parseSize(tc.in)
		if (err != nil) != (tc.want == 0) || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

const fioSample = `note: both iodepth >= 1 and synchronous I/O engine are selected
{"jobs": [{"error": 0, "usr_cpu": 2.0, "sys_cpu": 8.0, "job_runtime": 2000,
 "read": {"io_bytes": 4096000, "bw_bytes": 2048000, "iops": 500, "runtime": 2000,
  "lat_ns": {"mean": 1500.5}, "clat_ns": {"percentile": {"50.000000": 1200}}},
 "write": {"io_bytes": 0}}]}`

func TestParseFio(t *testing.T) {
	r, err := parseFio([]byte(fioSample), false)
	if err != nil {
		t.Fatal(err)
	}
	// CPU: 10% of 2 s = 200 ms over 500 IOPS * 2 s = 1000 I/Os.
	if r.bw != 2048000 || r.iops != 500 || r.mean != 1500.5 || r.p50 != 1200 || r.bytes != 4096000 || r.cpuPerOp != 200e3 {
		t.Fatalf("%+v", r)
	}
	for _, bad := range []string{"", "{", `{"jobs": []}`, `{"jobs": [{"error": 5}]}`} {
		if _, err := parseFio([]byte(bad), true); err == nil {
			t.Errorf("parseFio(%q) succeeded", bad)
		}
	}
}

func FuzzParseFio(f *testing.F) {
	f.Add([]byte(fioSample))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseFio(b, false) // must not panic
		parseSize(string(b))
	})
}

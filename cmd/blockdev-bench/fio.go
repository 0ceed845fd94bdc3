package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"time"
)

// fioOutput is the part of fio's --output-format=json we read. With
// --group_reporting all jobs are summed into jobs[0].
type fioOutput struct {
	Jobs []struct {
		Error      int     `json:"error"`
		UsrCPU     float64 `json:"usr_cpu"`     // % of job_runtime
		SysCPU     float64 `json:"sys_cpu"`     // % of job_runtime
		JobRuntime float64 `json:"job_runtime"` // ms, summed over jobs
		Read       fioStat `json:"read"`
		Write      fioStat `json:"write"`
	} `json:"jobs"`
}

type fioStat struct {
	IOBytes uint64  `json:"io_bytes"`
	BW      float64 `json:"bw_bytes"`
	IOPS    float64 `json:"iops"`
	Runtime float64 `json:"runtime"` // ms
	Lat     struct {
		Mean float64 `json:"mean"`
	} `json:"lat_ns"`
	Clat struct {
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

// runFio runs one case with fio on path: psync (pread/pwrite, as ours),
// O_DIRECT, numjobs = concurrency, time-based.
func runFio(ctx context.Context, fio, path string, size int64, c benchCase, d time.Duration) (result, error) {
	rw := "randread"
	if c.write {
		rw = "write"
	}
	args := []string{
		"--name=bench", "--filename=" + path, "--size=" + strconv.FormatInt(size, 10),
		"--rw=" + rw, "--bs=" + strconv.Itoa(c.bs), "--direct=1", "--ioengine=psync",
		"--numjobs=" + strconv.Itoa(c.jobs), "--group_reporting", "--time_based",
		"--runtime=" + strconv.FormatInt(d.Milliseconds(), 10) + "ms",
		"--norandommap", "--randrepeat=0", "--allow_file_create=0", "--fallocate=none",
		"--output-format=json",
	}
	ctx, cancel := context.WithTimeout(ctx, d+time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, fio, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("fio %v: %w: %s", args, err, stderr.Bytes())
	}
	return parseFio(stdout.Bytes(), c.write)
}

func parseFio(out []byte, write bool) (result, error) {
	// fio may print notices before the JSON document.
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	var o fioOutput
	if err := json.Unmarshal(out, &o); err != nil {
		return result{}, fmt.Errorf("fio output: %w", err)
	}
	if len(o.Jobs) == 0 {
		return result{}, errors.New("fio output: no jobs")
	}
	j := o.Jobs[0]
	if j.Error != 0 {
		return result{}, fmt.Errorf("fio job error %d", j.Error)
	}
	s := j.Read
	if write {
		s = j.Write
	}
	cpu := (j.UsrCPU + j.SysCPU) / 100 * j.JobRuntime * 1e6 // ns
	return result{
		cpuPerOp: cpu / max(s.IOPS*s.Runtime/1e3, 1),
		bw:       s.BW,
		iops:     s.IOPS,
		mean:     s.Lat.Mean,
		p50:      s.Clat.Percentile["50.000000"],
		bytes:    s.IOBytes,
	}, nil
}

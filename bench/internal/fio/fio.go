// Package fio runs the fio benchmark tool and reads its JSON report, for
// the bench binaries that set strata's I/O beside fio's on the same file
// (bench/blockdev-bench, bench/engine-bench).
package fio

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

// Job is one fio run on a file: psync (pread/pwrite, as strata's devices),
// O_DIRECT, Jobs workers summed by --group_reporting, time-based.
type Job struct {
	RW   string // write | read | randread
	BS   int    // block size in bytes
	Jobs int    // concurrent workers
	D    time.Duration
}

// Result is what a run measured.
type Result struct {
	BW, IOPS   float64 // bytes/s, ops/s
	Mean, P50  float64 // latency in ns: mean of the whole I/O, median of completion
	CPUPerOpNs float64 // CPU time (user+system) per I/O, ns
	Bytes      uint64
}

// Run runs j with the fio binary on path (size bytes; the file must
// exist) and parses its report. It gives fio D plus a minute.
func Run(ctx context.Context, bin, path string, size int64, j Job) (Result, error) {
	args := []string{
		"--name=bench", "--filename=" + path, "--size=" + strconv.FormatInt(size, 10),
		"--rw=" + j.RW, "--bs=" + strconv.Itoa(j.BS), "--direct=1", "--ioengine=psync",
		"--numjobs=" + strconv.Itoa(j.Jobs), "--group_reporting", "--time_based",
		"--runtime=" + strconv.FormatInt(j.D.Milliseconds(), 10) + "ms",
		"--norandommap", "--randrepeat=0", "--allow_file_create=0", "--fallocate=none",
		"--output-format=json",
	}
	ctx, cancel := context.WithTimeout(ctx, j.D+time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("fio %v: %w: %s", args, err, stderr.Bytes())
	}
	return Parse(stdout.Bytes(), j.RW == "write")
}

type stat struct {
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

// Parse reads fio's --output-format=json report (all jobs summed into
// jobs[0] by --group_reporting; fio may print notices before it): the
// write side when write, else the read side.
func Parse(out []byte, write bool) (Result, error) {
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	var o struct {
		Jobs []struct {
			Error      int     `json:"error"`
			UsrCPU     float64 `json:"usr_cpu"`     // % of job_runtime
			SysCPU     float64 `json:"sys_cpu"`     // % of job_runtime
			JobRuntime float64 `json:"job_runtime"` // ms, summed over jobs
			Read       stat    `json:"read"`
			Write      stat    `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &o); err != nil {
		return Result{}, fmt.Errorf("fio output: %w", err)
	}
	if len(o.Jobs) == 0 {
		return Result{}, errors.New("fio output: no jobs")
	}
	j := o.Jobs[0]
	if j.Error != 0 {
		return Result{}, fmt.Errorf("fio job error %d", j.Error)
	}
	s := j.Read
	if write {
		s = j.Write
	}
	cpu := (j.UsrCPU + j.SysCPU) / 100 * j.JobRuntime * 1e6 // ns
	return Result{
		BW: s.BW, IOPS: s.IOPS, Mean: s.Lat.Mean, P50: s.Clat.Percentile["50.000000"],
		CPUPerOpNs: cpu / max(s.IOPS*s.Runtime/1e3, 1),
		Bytes:      s.IOBytes,
	}, nil
}

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

// fioResult is what a fio run measured: bandwidth, IOPS, and latencies in
// nanoseconds (mean of the whole I/O, median of completion; with psync
// they differ by the submission cost only).
type fioResult struct {
	bw, iops, mean, p50 float64
}

// fioJob describes one fio run on the bench file: psync (pread/pwrite,
// as ours), O_DIRECT, numjobs workers, time-based.
type fioJob struct {
	rw   string // write | read | randread
	bs   int
	jobs int
	d    time.Duration
}

// runFio runs job on path (size bytes) and parses its JSON report.
func runFio(ctx context.Context, fio, path string, size int64, j fioJob) (fioResult, error) {
	args := []string{
		"--name=bench", "--filename=" + path, "--size=" + strconv.FormatInt(size, 10),
		"--rw=" + j.rw, "--bs=" + strconv.Itoa(j.bs), "--direct=1", "--ioengine=psync",
		"--numjobs=" + strconv.Itoa(j.jobs), "--group_reporting", "--time_based",
		"--runtime=" + strconv.FormatInt(j.d.Milliseconds(), 10) + "ms",
		"--norandommap", "--randrepeat=0", "--allow_file_create=0", "--fallocate=none",
		"--output-format=json",
	}
	ctx, cancel := context.WithTimeout(ctx, j.d+time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, fio, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fioResult{}, fmt.Errorf("fio %v: %w: %s", args, err, stderr.Bytes())
	}
	return parseFio(stdout.Bytes(), j.rw == "write")
}

type fioStat struct {
	BW   float64 `json:"bw_bytes"`
	IOPS float64 `json:"iops"`
	Lat  struct {
		Mean float64 `json:"mean"`
	} `json:"lat_ns"`
	Clat struct {
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

// parseFio reads fio's --output-format=json (jobs summed into jobs[0] by
// --group_reporting); fio may print notices before the document.
func parseFio(out []byte, write bool) (fioResult, error) {
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	var o struct {
		Jobs []struct {
			Error int     `json:"error"`
			Read  fioStat `json:"read"`
			Write fioStat `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &o); err != nil {
		return fioResult{}, fmt.Errorf("fio output: %w", err)
	}
	if len(o.Jobs) == 0 {
		return fioResult{}, errors.New("fio output: no jobs")
	}
	j := o.Jobs[0]
	if j.Error != 0 {
		return fioResult{}, fmt.Errorf("fio job error %d", j.Error)
	}
	s := j.Read
	if write {
		s = j.Write
	}
	return fioResult{bw: s.BW, iops: s.IOPS, mean: s.Lat.Mean, p50: s.Clat.Percentile["50.000000"]}, nil
}

package main

import (
	"context"
	"time"

	"strata/bench/internal/fio"
)

// runFio runs one case with fio on path: the same pattern as ours (pread
// or pwrite, O_DIRECT, numjobs = concurrency, time-based).
func runFio(ctx context.Context, bin, path string, size int64, c benchCase, d time.Duration) (result, error) {
	rw := "randread"
	if c.write {
		rw = "write"
	}
	r, err := fio.Run(ctx, bin, path, size, fio.Job{RW: rw, BS: c.bs, Jobs: c.jobs, D: d})
	return result{bw: r.BW, iops: r.IOPS, mean: r.Mean, p50: r.P50, cpuPerOp: r.CPUPerOpNs, bytes: r.Bytes}, err
}

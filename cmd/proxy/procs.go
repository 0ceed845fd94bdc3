package main

import (
	"os"
	"runtime"
)

// Go runs goroutines on GOMAXPROCS Ps (scheduler slots), by default one
// per CPU the process may use. A goroutine in a system call keeps its P
// until the call returns or the runtime's sysmon takes the P back, at the
// earliest after 20µs, and a thread the kernel deschedules (for the load
// generator or the origin sharing the box) keeps its P too; goroutines
// queued on such a P wait. On two CPUs under peerbench's misses, strata,
// origin and wrk left 11% of the CPUs idle with two Ps (1.78 of 2 busy)
// and 8.5% with four, at about the same system calls per miss as a bare
// fasthttp proxy (6.2). One P more than the CPUs keeps them busy. Measured
// with peerbench, strata alone on two CPUs, GOMAXPROCS 2 against 3 in
// eight alternating pairs (two sets, 19:47-19:56 and 20:28-20:31 on
// 2026-12-03), medians of the pairs' ratios: 1 KiB hits 1.085x req/s
// (0.92-1.31), 256 KiB hits 1.13x (0.86-1.27), misses 1.08x (0.92-1.40),
// disk-bound scenarios unchanged, CPU per request lower; the cost is the
// p99 of 1 KiB hits, 1.20x (0.93-1.45), as the kernel time-slices three
// threads on two CPUs under saturation.

// setProcs gives the scheduler one P more than the runtime's default
// (the CPUs, or the cgroup's CPU limit), unless GOMAXPROCS is set. It
// returns the P count in use.
func setProcs() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	n := runtime.GOMAXPROCS(0) + 1
	runtime.GOMAXPROCS(n)
	return n
}

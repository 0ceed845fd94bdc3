package main

import (
	"os"
	"runtime"
)

// Go runs goroutines on GOMAXPROCS Ps (scheduler slots), by default one
// per CPU the process may use. A goroutine in a system call keeps its P
// until the call returns or the runtime's sysmon takes the P back, at the
// earliest after 20µs; strata's calls are mostly writes to sockets that
// take about 10µs on loopback (the kernel runs the receiver's side of
// TCP in the sender's call), so with one P per CPU a CPU often sits
// idle while its P waits in a write and runnable goroutines queue
// behind it. One P more than the CPUs keeps them busy: peerbench, strata
// alone on two CPUs, two rounds each (GOMAXPROCS 2 → 3): 1 KiB hits
// 73-87k → 89k req/s, 256 KiB hits 10.1-11.7k → 12.7-12.8k, misses
// 19.6-21.8k → 24.8-27.5k, with less CPU per request (1 KiB hits 11.4-14.1
// → 11.3-11.5µs) and no change for disk-bound scenarios; the cost is the
// p99 of 1 KiB hits, 6.0-7.0 → 8.4-9.1 ms, as the kernel time-slices
// three threads on two CPUs.

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

package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// Noise tells how much of the measured latency the machine, not the
// cache, caused: on a shared host a thread that is runnable but waits for
// a CPU, or a goroutine waiting for a P, or a GC pause, adds milliseconds
// to whatever operation it was in.
//
//   - RunQueueSec: time this process's threads were runnable but not
//     running (Linux schedstat run_delay, summed over threads), against
//     CPUSec, the time they ran.
//   - SchedLat: the Go runtime's scheduling latency (a goroutine runnable
//     until it runs), from runtime/metrics.
//   - GC cycles and stop-the-world pauses in the span.
type Noise struct {
	CPUSec        float64 `json:"cpu_seconds"`
	RunQueueSec   float64 `json:"run_queue_seconds"`
	SchedLatP99   float64 `json:"go_sched_latency_p99_us"`
	SchedLatP999  float64 `json:"go_sched_latency_p999_us"`
	GCCycles      uint64  `json:"gc_cycles"`
	GCPauseP99    float64 `json:"gc_pause_p99_us"`
	GCPauseMax    float64 `json:"gc_pause_max_us"`
	GCPauseTotalS float64 `json:"gc_pause_total_seconds"`
}

// noiseSnap is the cumulative counters at one instant.
type noiseSnap struct {
	exec, delay int64 // ns, summed over threads
	samples     []metrics.Sample
}

const (
	mSched  = "/sched/latencies:seconds"
	mPauses = "/sched/pauses/total/gc:seconds"
	mCycles = "/gc/cycles/total:gc-cycles"
)

func takeNoise() noiseSnap {
	s := noiseSnap{samples: []metrics.Sample{{Name: mSched}, {Name: mPauses}, {Name: mCycles}}}
	metrics.Read(s.samples)
	s.exec, s.delay = schedstat()
	return s
}

// noiseBetween is what happened between a and b.
func noiseBetween(a, b noiseSnap) Noise {
	n := Noise{CPUSec: float64(b.exec-a.exec) / 1e9, RunQueueSec: float64(b.delay-a.delay) / 1e9}
	if h := histDiff(a.samples[0], b.samples[0]); h != nil {
		n.SchedLatP99, n.SchedLatP999 = histQuantile(h, 0.99)*1e6, histQuantile(h, 0.999)*1e6
	}
	if h := histDiff(a.samples[1], b.samples[1]); h != nil {
		n.GCPauseP99, n.GCPauseMax = histQuantile(h, 0.99)*1e6, histQuantile(h, 1)*1e6
		for i, c := range h.Counts {
			n.GCPauseTotalS += float64(c) * bucketTop(h, i)
		}
	}
	if a.samples[2].Value.Kind() == metrics.KindUint64 && b.samples[2].Value.Kind() == metrics.KindUint64 {
		n.GCCycles = b.samples[2].Value.Uint64() - a.samples[2].Value.Uint64()
	}
	return n
}

// histDiff is b - a for two cumulative histograms of one metric; nil if
// the runtime does not have it.
func histDiff(a, b metrics.Sample) *metrics.Float64Histogram {
	if a.Value.Kind() != metrics.KindFloat64Histogram || b.Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	ha, hb := a.Value.Float64Histogram(), b.Value.Float64Histogram()
	if len(ha.Counts) != len(hb.Counts) {
		return nil
	}
	d := &metrics.Float64Histogram{Buckets: hb.Buckets, Counts: make([]uint64, len(hb.Counts))}
	for i := range d.Counts {
		d.Counts[i] = hb.Counts[i] - ha.Counts[i]
	}
	return d
}

// histQuantile returns the top of the bucket holding quantile q (its
// bottom for the last, unbounded bucket), in the histogram's unit.
func histQuantile(h *metrics.Float64Histogram, q float64) float64 {
	var total uint64
	for _, c := range h.Counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := max(1, uint64(math.Ceil(q*float64(total))))
	var seen uint64
	for i, c := range h.Counts {
		if seen += c; seen >= rank {
			return bucketTop(h, i)
		}
	}
	return bucketTop(h, len(h.Counts)-1)
}

func bucketTop(h *metrics.Float64Histogram, i int) float64 {
	if top := h.Buckets[i+1]; !math.IsInf(top, 1) {
		return top
	}
	return h.Buckets[i]
}

// schedstat sums run time and run-queue wait over this process's threads
// (/proc/self/task/*/schedstat: "exec_ns delay_ns timeslices"). Threads
// that exit in between drop out of the sum, so the figures are a lower
// bound; Go rarely ends threads. 0, 0 off Linux.
func schedstat() (exec, delay int64) {
	paths, _ := filepath.Glob("/proc/self/task/*/schedstat")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		e, d, ok := parseSchedstat(string(data))
		if ok {
			exec += e
			delay += d
		}
	}
	return exec, delay
}

func parseSchedstat(s string) (exec, delay int64, ok bool) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, 0, false
	}
	e, err1 := strconv.ParseInt(f[0], 10, 64)
	d, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || e < 0 || d < 0 {
		return 0, 0, false
	}
	return e, d, true
}

func (n *Noise) print(w io.Writer, wall time.Duration) {
	share := 0.0
	if n.CPUSec+n.RunQueueSec > 0 {
		share = 100 * n.RunQueueSec / (n.CPUSec + n.RunQueueSec)
	}
	fmt.Fprintf(w, "Noise: threads ran %.1f CPU-s in %.1f s and waited %.1f s for a CPU (%.0f%% of runnable time); "+
		"Go scheduling latency p99 %.0fus, p999 %.0fus; GC %d cycles, pauses p99 %.0fus, max %.0fus\n",
		n.CPUSec, wall.Seconds(), n.RunQueueSec, share, n.SchedLatP99, n.SchedLatP999, n.GCCycles, n.GCPauseP99, n.GCPauseMax)
}

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// rssReport is the memory target: peak RSS ≤ --mem + flush
// buffers + 32 B per disk entry + 64 MiB.
type rssReport struct {
	PeakBytes    int64 `json:"peak_bytes"` // VmHWM; 0 where unknown
	BoundBytes   int64 `json:"bound_bytes"`
	FlushBuffers int64 `json:"flush_buffer_bytes"`
	DiskEntries  int   `json:"disk_entries_max"`
}

const (
	rssPerEntry = 32
	rssSlack    = 64 << 20
)

func (r *rssReport) fill(mem int64, entries int) {
	r.DiskEntries = entries
	r.BoundBytes = mem + r.FlushBuffers + rssPerEntry*int64(entries) + rssSlack
	r.PeakBytes = peakRSS()
}

func (r *rssReport) within() bool { return r.PeakBytes > 0 && r.PeakBytes <= r.BoundBytes }

func (r *rssReport) print(w io.Writer, mem int64) {
	verdict := "within"
	switch {
	case r.PeakBytes == 0:
		verdict = "unknown (no /proc/self/status)"
	case !r.within():
		verdict = "OVER"
	}
	fmt.Fprintf(w, "Peak RSS (VmHWM): %s; bound %s = mem %s + flush buffers %s + 32 B × %d disk entries + 64 MiB: %s\n",
		iec(uint64(r.PeakBytes)), iec(uint64(r.BoundBytes)), iec(uint64(mem)), iec(uint64(r.FlushBuffers)),
		r.DiskEntries, verdict)
}

// peakRSS reads VmHWM from /proc/self/status, in bytes; 0 if unknown.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseVmHWM(data)
}

// parseVmHWM finds "VmHWM:    1234 kB" in a status file.
func parseVmHWM(status []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			return 0
		}
		return kb << 10
	}
	return 0
}

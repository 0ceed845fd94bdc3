package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process-tree accounting from /proc: a proxy is its started process and
// every descendant (nginx workers, Varnish's child, ...).

// clockTicks is USER_HZ, 100 on every Linux build we run on.
const clockTicks = 100

// procStat is the part of /proc/PID/stat we read.
type procStat struct {
	ppid int
	// ticks is utime+stime+cutime+cstime: the process's CPU and that of
	// children it has reaped; self is utime+stime alone.
	ticks, self int64
}

// readStat parses /proc/PID/stat; the command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return procStat{}, fmt.Errorf("peerbench: malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("peerbench: short stat")
	}
	var st procStat
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, fmt.Errorf("peerbench: stat ppid: %w", err)
	}
	for i, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("peerbench: stat times: %w", err)
		}
		st.ticks += n
		if i < 2 {
			st.self += n
		}
	}
	return st, nil
}

// processTree returns root and all its live descendants.
func processTree(root int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	kids := map[int][]int{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			kids[st.ppid] = append(kids[st.ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}

// cpuSeconds sums the CPU time of root's tree.
func cpuSeconds(root int) float64 {
	var ticks int64
	for _, pid := range processTree(root) {
		if st, err := readStat(pid); err == nil {
			ticks += st.ticks
		}
	}
	return float64(ticks) / clockTicks
}

// selfCPUSeconds is this process's own CPU time (utime+stime), without
// that of the children it reaped (wrk).
func selfCPUSeconds() float64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return -1
	}
	st, err := parseStat(b)
	if err != nil {
		return -1
	}
	return float64(st.self) / clockTicks
}

// resetPeakRSS resets VmHWM of every process in root's tree
// (clear_refs "5", Linux 4.0+); failures are ignored: the peak then covers
// the process's whole life, which the report cannot tell apart.
func resetPeakRSS(root int) {
	for _, pid := range processTree(root) {
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	}
}

// peakRSS sums VmHWM over root's tree, in bytes. Shared pages (nginx's
// shared zone, code) count once per process, so it overstates a
// multi-process server a little.
func peakRSS(root int) int64 {
	var total int64
	for _, pid := range processTree(root) {
		f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		total += parseHWM(f)
		f.Close()
	}
	return total
}

func parseHWM(f *os.File) int64 {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// cgroupMemoryLimit is the memory limit of this process's cgroup (v2
// memory.max, or v1 memory.limit_in_bytes), or 0 when there is none or it
// cannot be read.
func cgroupMemoryLimit() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	v2, v1 := cgroupPaths(b)
	if v2 != "" {
		if l, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", v2, "memory.max")); err == nil {
			return parseCgroupLimit(l)
		}
	}
	if v1 != "" {
		if l, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes")); err == nil {
			return parseCgroupLimit(l)
		}
	}
	return 0
}

// cgroupPaths reads /proc/self/cgroup: the v2 path ("0::/p") and the v1
// memory controller's path ("N:memory:/p" or "N:a,memory:/p").
func cgroupPaths(b []byte) (v2, v1 string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || strings.Contains(parts[2], "..") {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case containsField(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	return v2, v1
}

func containsField(list, f string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == f {
			return true
		}
	}
	return false
}

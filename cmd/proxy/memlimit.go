package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Go's heap is not the whole of strata's memory: the memory tier's arena
// is mapped outside it. In a container (a memory cgroup) with the
// default GOGC the heap grows to twice its live size before a GC, and a
// disk-heavy load (large slices read and written) could cross the
// cgroup's limit and be OOM-killed although little of it was live
// (issue 7's bench: 192MiB cgroup, 64MiB tier). So, unless GOMEMLIMIT is
// set, the heap gets a soft limit of the cgroup's limit minus the memory
// tier minus a slack for stacks, the runtime and the page tables.

// memLimitFloor is the least soft limit set: below it GC would run
// continuously; the cgroup is too small and its limit is left to act.
const memLimitFloor = 32 << 20

// heapLimit is the soft limit for a cgroup limit and a memory tier of
// tier bytes, or 0 when none should be set.
func heapLimit(cgroup, tier int64) int64 {
	if cgroup <= 0 {
		return 0
	}
	slack := max(16<<20, cgroup/10)
	if l := cgroup - tier - slack; l >= memLimitFloor {
		return l
	}
	return 0
}

// setMemoryLimit applies heapLimit to this process's cgroup, unless
// GOMEMLIMIT is set; it logs what it did.
func setMemoryLimit(logger *slog.Logger, tier int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	cg := cgroupMemoryLimit()
	if l := heapLimit(cg, tier); l > 0 {
		debug.SetMemoryLimit(l)
		logger.Info("Go heap soft limit set from the memory cgroup", "cgroup_limit", cg, "memory_tier", tier, "heap_limit", l)
	} else if cg > 0 {
		logger.Warn("memory cgroup too small for the memory tier: no Go heap limit set", "cgroup_limit", cg, "memory_tier", tier)
	}
}

// parseCgroupLimit reads a memory.max or memory.limit_in_bytes file's
// content: a byte count, or "max" (or a v1 "unlimited" near 2^63) for none.
func parseCgroupLimit(b []byte) int64 {
	s := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<60 {
		return 0
	}
	return n
}

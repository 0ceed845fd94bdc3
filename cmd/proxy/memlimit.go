package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"strata/configs"
)

// Go's heap is not the whole of strata's memory: the memory tier's arena
// is mapped outside it. With the default GOGC the heap grows to twice its
// live size before a GC, so a disk-heavy load (large slices read and
// written) would push the process well past what its pools hold. So,
// unless GOMEMLIMIT is set, the heap gets a soft limit from the memory
// budget (limits.memory, or the memory cgroup's limit): the budget less
// the memory tier less what the runtime does not manage.

// setMemoryLimit logs the budget and applies its heap limit, unless
// GOMEMLIMIT is set.
func setMemoryLimit(logger *slog.Logger, b configs.Budget) {
	if b.Short() {
		logger.Warn("memory cgroup too small for this config: pools sized for the least working memory",
			"budget", b.String())
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		logger.Info("memory budget (Go heap limit from GOMEMLIMIT)", "budget", b.String())
		return
	}
	debug.SetMemoryLimit(b.HeapLimit())
	logger.Info("memory budget", "budget", b.String(), "heap_limit_bytes", b.HeapLimit())
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

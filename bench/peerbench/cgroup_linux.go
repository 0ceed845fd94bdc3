package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroup is one system's memory cgroup. On cgroup v2 it is
// /sys/fs/cgroup/peerbench-NAME (memory.max, memory.peak); on v1 it is a
// child of this process's own memory cgroup (memory.limit_in_bytes,
// memory.max_usage_in_bytes), so the machine's own limits still apply above
// it. A process joins it before exec (see startProc), so every child it
// forks is inside too, and page cache it touches is charged to it.
type cgroup struct {
	dir string
	v2  bool
}

const cgroupRoot = "/sys/fs/cgroup"

func newCgroup(name string, limit int64) (*cgroup, error) {
	cg, err := cgroupDir(name)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(cg.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("peerbench: cgroup: %w", err)
	}
	file := "memory.limit_in_bytes"
	if cg.v2 {
		file = "memory.max"
	}
	if err := cg.write(file, strconv.FormatInt(limit, 10)); err != nil {
		cg.remove()
		return nil, err
	}
	if cg.v2 {
		_ = cg.write("memory.swap.max", "0")
	}
	return cg, nil
}

func cgroupDir(name string) (*cgroup, error) {
	leaf := "peerbench-" + name
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		ctl, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"))
		if err != nil || !strings.Contains(string(ctl), "memory") {
			return nil, fmt.Errorf("peerbench: cgroup v2: memory controller not enabled at the root")
		}
		return &cgroup{dir: filepath.Join(cgroupRoot, leaf), v2: true}, nil
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("peerbench: cgroup: %w", err)
	}
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			return &cgroup{dir: filepath.Join(cgroupRoot, "memory", parts[2], leaf)}, nil
		}
	}
	return nil, fmt.Errorf("peerbench: cgroup: no memory controller mounted")
}

func (c *cgroup) write(file, val string) error {
	if err := os.WriteFile(filepath.Join(c.dir, file), []byte(val), 0); err != nil {
		return fmt.Errorf("peerbench: cgroup %s: %w", file, err)
	}
	return nil
}

func (c *cgroup) readInt(file, key string) int64 {
	b, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if key != "" {
			v, ok := strings.CutPrefix(line, key+" ")
			if !ok {
				continue
			}
			line = v
		}
		n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err == nil {
			return n
		}
	}
	return -1
}

func (c *cgroup) procsFile() string { return filepath.Join(c.dir, "cgroup.procs") }

// peak is the cgroup's peak memory (RSS and page cache), -1 if unknown.
func (c *cgroup) peak() int64 {
	if c.v2 {
		return c.readInt("memory.peak", "")
	}
	return c.readInt("memory.max_usage_in_bytes", "")
}

// resetPeak starts a new peak window where the kernel allows it.
func (c *cgroup) resetPeak() {
	if c.v2 {
		_ = c.write("memory.peak", "0")
		return
	}
	_ = c.write("memory.max_usage_in_bytes", "0")
}

// oomKills counts processes the kernel killed for the limit.
func (c *cgroup) oomKills() int64 {
	if c.v2 {
		return c.readInt("memory.events", "oom_kill")
	}
	return c.readInt("memory.oom_control", "oom_kill")
}

// remove deletes the cgroup once its processes are gone (bounded wait).
func (c *cgroup) remove() {
	for i := 0; i < 50; i++ {
		if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "peerbench: could not remove cgroup %s\n", c.dir)
}

package configs

import (
	"errors"
	"strings"
	"testing"
)

// composeWith loads yaml (an origin is added), applies o and composes.
func composeWith(t *testing.T, yaml string, o Overrides) (*Parts, error) {
	t.Helper()
	c, err := Load([]byte("origins: [{url: \"http://127.0.0.1:8081\"}]\n"+yaml), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(o); err != nil {
		t.Fatal(err)
	}
	c.EnsureDefaults()
	return c.Compose(nil)
}

// TestBudget: limits.memory resolves from the key, the cgroup or the
// config, and the write queue and fill bounds follow from its work share.
func TestBudget(t *testing.T) {
	const disk = "cache: {memory: {capacity: 64MiB}, disk: {path: /tmp/x, size: 512MiB}}\n"
	// Default disk: (2·2 + 1) · 4 MiB buffers, the write queue's floor of
	// 2·2 · 4 MiB, 8 readers · 2 MiB, 512 KiB index.
	diskTerm := 20*MiB + 16*MiB + 16*MiB + 512*KiB
	// Client connections: header buffer + 8 KiB; origin connections: the
	// 64 KiB response-header buffer + 8 KiB.
	conns := 10000*(16*KiB+8*KiB) + 512*(64*KiB+8*KiB)
	for _, tc := range []struct {
		name, yaml       string
		cgroup           int64
		total, work      int64
		source           string
		queue            int64
		largeFills, fill int
	}{
		{"derived", disk, 0, 64*MiB + 36*MiB + diskTerm + conns + 64*MiB, 64 * MiB, "derived", 16*MiB + 8*MiB, 3, 128},
		{"explicit", disk + "limits: {memory: 1GiB, max_conns: 100}\n", 0, GiB,
			GiB - 64*MiB - 36*MiB - diskTerm - 100*24*KiB - 512*72*KiB, "limits.memory", 0, 0, 1024},
		{"cgroup", disk, 2 * GiB, 2*GiB - 2*GiB/10, 0, "cgroup", 0, 0, 1024},
		{"memory only", "cache: {memory: {capacity: 64MiB}, disk: {path: \"\"}}\n", 0,
			64*MiB + 36*MiB + conns + 64*MiB, 64 * MiB, "derived", 0, 3, 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := composeWith(t, tc.yaml, Overrides{CgroupLimit: tc.cgroup})
			if err != nil {
				t.Fatal(err)
			}
			b := p.Memory
			if b.Total != tc.total || b.Source != tc.source || (tc.work != 0 && b.Work != tc.work) {
				t.Fatalf("budget %v, want total %s work %s (%s)", b, mib(tc.total), mib(tc.work), tc.source)
			}
			if b.HeapLimit() != b.Total-b.Tier-16*MiB {
				t.Errorf("heap limit %s", mib(b.HeapLimit()))
			}
			if tc.queue != 0 && p.Cache.Disk.QueueBytes != tc.queue {
				t.Errorf("queue %s, want %s", mib(p.Cache.Disk.QueueBytes), mib(tc.queue))
			}
			if tc.largeFills != 0 && p.Proxy.MaxLargeFills != tc.largeFills {
				t.Errorf("large fills %d, want %d", p.Proxy.MaxLargeFills, tc.largeFills)
			}
			if p.Proxy.MaxFills != tc.fill {
				t.Errorf("fills %d, want %d", p.Proxy.MaxFills, tc.fill)
			}
		})
	}
}

// TestBudgetTooSmall: a limits.memory that leaves less than the least
// working memory is a problem naming the key; a cgroup that small is not
// (strata starts and says so: Short).
func TestBudgetTooSmall(t *testing.T) {
	_, err := composeWith(t, "cache: {memory: {capacity: 256MiB}}\nlimits: {memory: 300MiB}\n", Overrides{})
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Field != "limits.memory" || !strings.Contains(ps[0].Msg, "lower cache.memory.capacity") {
		t.Fatalf("got %v", err)
	}
	p, err := composeWith(t, "cache: {memory: {capacity: 256MiB}, disk: {path: /tmp/x, size: 1GiB}}\n", Overrides{CgroupLimit: 300 * MiB})
	if err != nil || !p.Memory.Short() || p.Cache.Disk.QueueBytes != 16*MiB+4*MiB {
		t.Fatalf("cgroup: %v %v, queue %d", err, p.Memory, p.Cache.Disk.QueueBytes)
	}
}

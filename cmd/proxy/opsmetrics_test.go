package main

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"strata/admission"
	"strata/configs"
)

// TestOpsGauges: the limits are exported as configured, the budget is 0
// without a disk tier or a rate limit, and both pass the linter.
func TestOpsGauges(t *testing.T) {
	for _, tc := range []struct {
		name       string
		devices    int
		disabled   bool
		wantBudget string
	}{
		{"disk", 1, false, "3.3554432e+07"},
		{"memory only", 0, false, "0"},
		{"rate limit off", 1, true, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &configs.Parts{Memory: configs.Budget{Total: 1 << 30}, Devices: make([]configs.DevicePart, tc.devices)}
			p.Admission.RateLimit = admission.RateOptions{BytesPerSecond: 32 << 20, Disabled: tc.disabled}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(opsGauges(p)...)
			want := `# HELP strata_disk_write_budget_bytes_per_second The disk write budget (cache.disk.admission.rate); 0 without a disk tier or a rate limit.
# TYPE strata_disk_write_budget_bytes_per_second gauge
strata_disk_write_budget_bytes_per_second ` + tc.wantBudget + `
# HELP strata_memory_limit_bytes The memory budget: limits.memory, or the memory cgroup's limit, or the sum of strata's terms outside a cgroup.
# TYPE strata_memory_limit_bytes gauge
strata_memory_limit_bytes 1.073741824e+09
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
				t.Error(err)
			}
			if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
				t.Errorf("lint: %v %v", probs, err)
			}
		})
	}
}

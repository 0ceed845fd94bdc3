package hybrid

import (
	"fmt"
	"testing"
	"time"

	"strata/admission"
)

// TestColdFill: a cold set eight times the memory tier, inserted once into
// a fresh disk whose admission rate admits next to nothing, reaches the
// disk when the Filler may fill it past the rate (within its endurance
// budget), and does not when fill is off: the counters say which.
func TestColdFill(t *testing.T) {
	const (
		devBytes = 32 << 20 // testCache's device
		entries  = 256
		size     = 32 << 10 // 8 MiB in all
	)
	for _, tc := range []struct {
		name         string
		fill         admission.FillOptions
		minHits      int // of entries
		maxHits      int
		overBudget   bool
		admittedFill bool
	}{
		{"fill", admission.FillOptions{DeviceBytes: devBytes}, entries, entries, false, true},
		{"fill off", admission.FillOptions{DeviceBytes: devBytes, Disabled: true}, 0, entries / 4, false, false},
		// A budget of 4 MiB at start (a week of 1/56 of the device a
		// day, less than a day's and a device's): half the set, then
		// over budget.
		{"budget spent", admission.FillOptions{DeviceBytes: devBytes, DriveWritesPerDay: 0.125 / 7}, entries / 4, entries * 3 / 4, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &admission.ManualClock{} // never moves: the rate's burst is all it admits
			ctl, err := admission.New(admission.Options{
				Frequency: admission.FrequencyOptions{Disabled: true},
				RateLimit: admission.RateOptions{BytesPerSecond: 1 << 10, BurstBytes: 1 << 10, Clock: clk},
				Fill:      tc.fill,
			})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := testCache(t, 1<<20, func(o *Options) { o.Admission = ctl })
			key := func(i int) []byte { return fmt.Appendf(nil, "cold-%d", i) }
			for i := range entries {
				c.Insert(key(i), fmt.Appendf(make([]byte, 0, size), "%0*d", size, i), time.Time{})
				waitQueue(t, c) // a device that keeps up
			}
			hits := 0
			for i := range entries {
				if v, _, ok := c.Get(key(i), nil); ok {
					if string(v) != fmt.Sprintf("%0*d", size, i) {
						t.Fatalf("%s: wrong value", key(i))
					}
					hits++
				}
			}
			s := c.Stats()
			t.Logf("hits %d/%d; admitted rate %d, fill %d; refused throttled %d, over budget %d",
				hits, entries, s.AdmittedRate, s.AdmittedFill, s.RefusedThrottled, s.RefusedOverBudget)
			if hits < tc.minHits || hits > tc.maxHits {
				t.Errorf("hits %d, want %d..%d", hits, tc.minHits, tc.maxHits)
			}
			if (s.AdmittedFill > 0) != tc.admittedFill || (s.RefusedOverBudget > 0) != tc.overBudget {
				t.Errorf("admitted by fill %d, refused over budget %d: want fill %v, over budget %v",
					s.AdmittedFill, s.RefusedOverBudget, tc.admittedFill, tc.overBudget)
			}
			refused := s.RefusedCold + s.RefusedThrottled + s.RefusedOverBudget
			if refused != s.Disk.DropAdmission || s.AdmittedRate+s.AdmittedFill+refused != s.Memory.Evictions {
				t.Errorf("decisions %d admitted + %d refused; want the %d evictions, %d dropped by admission",
					s.AdmittedRate+s.AdmittedFill, refused, s.Memory.Evictions, s.Disk.DropAdmission)
			}
		})
	}
}

// waitQueue waits until the disk tier has written what it accepted.
func waitQueue(t *testing.T, c *Cache) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for c.Stats().Disk.QueuedBytes != 0 {
		if time.Now().After(deadline) {
			t.Fatal("disk queue did not drain")
		}
		time.Sleep(50 * time.Microsecond) // the flushers write on their own goroutines
	}
}

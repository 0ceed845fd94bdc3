package hybrid

import (
	"context"
	"fmt"
	"testing"
	"time"

	"strata/admission"
	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// refuseAll is an admission controller that lets nothing through.
type refuseAll struct{}

func (refuseAll) Admit(uint64, int) admission.Decision { return admission.Rejected }
func (refuseAll) Record(uint64)                        {}
func (refuseAll) Charge(int)                           {}

func restartOpts(dev blockdev.Device, policy memory.Policy) Options {
	return Options{
		Memory:    memory.Options{Capacity: 8 << 20, Shards: 4, Policy: policy},
		Disk:      disk.Options{RegionSize: 1 << 20, BufferSize: 256 << 10, FlushDelay: -1, ReadTimeout: 30 * time.Second},
		Device:    dev,
		Admission: refuseAll{}, // WriteDown must not ask it
	}
}

// TestWriteDownRestart: entries only in memory survive a clean stop
// (WriteDown, Close), come back from the checkpoint with no scan, and
// are read back into memory by the warm-up.
func TestWriteDownRestart(t *testing.T) {
	for _, policy := range []memory.Policy{memory.S3FIFO, memory.LRU} {
		t.Run(string(policy), func(t *testing.T) {
			dev, err := blockdev.NewMem(64<<20, 4096)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Open(restartOpts(dev, policy))
			if err != nil {
				t.Fatal(err)
			}
			const n = 300
			for i := range n {
				c.Insert(fmt.Appendf(nil, "k%d", i), val(i), time.Time{})
			}
			if s := c.Stats(); s.Disk.Inserts != 0 {
				t.Fatalf("disk writes before stop: %d", s.Disk.Inserts)
			}
			st := c.WriteDown(context.Background())
			if st.Entries != n || st.LeftEntries != 0 || st.HotKeys != n {
				t.Fatalf("write-down %+v", st)
			}
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			c, err = Open(restartOpts(dev.CrashClone(), policy))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			if s := c.Stats(); s.Disk.Recovered != n || s.Disk.RecoveredBatches != 0 {
				t.Fatalf("recovered %d entries, %d batches scanned: want %d from the checkpoint",
					s.Disk.Recovered, s.Disk.RecoveredBatches, n)
			}
			waitFor(t, func() bool { return c.mem.Len() == n })
			for i := range n {
				v, tier, ok := c.Get(fmt.Appendf(nil, "k%d", i), nil)
				if !ok || tier != TierMemory || string(v) != string(val(i)) {
					t.Fatalf("k%d: ok=%v tier=%v", i, ok, tier)
				}
			}
		})
	}
}

func val(i int) []byte { return fmt.Appendf(nil, "%0*d", 4000+i%100, i) }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

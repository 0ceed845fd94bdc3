package hybrid

import (
	"context"
	"fmt"
	"sync"
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

func restartOpts(devs []blockdev.Device, policy memory.Policy) Options {
	return Options{
		Memory:    memory.Options{Capacity: 8 << 20, Shards: 4, Policy: policy},
		Disk:      disk.Options{RegionSize: 1 << 20, BufferSize: 256 << 10, FlushDelay: -1, ReadTimeout: 30 * time.Second},
		Devices:   devs,
		Admission: refuseAll{}, // WriteDown must not ask it
	}
}

func memDevices(t *testing.T, n int) []blockdev.Device {
	t.Helper()
	var devs []blockdev.Device
	for range n {
		dev, err := blockdev.NewMem(32<<20, 4096)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, dev)
	}
	return devs
}

// crashClones returns what each device holds durably.
func crashClones(devs []blockdev.Device) []blockdev.Device {
	out := make([]blockdev.Device, len(devs))
	for i, d := range devs {
		out[i] = d.(*blockdev.MemDevice).CrashClone()
	}
	return out
}

// TestWriteDownRestart: entries only in memory survive a clean stop
// (WriteDown, Close), come back from the checkpoint with no scan, and
// are read back into memory by the warm-up. A write-down out of time
// writes nothing, says so, and the entries are gone after the restart.
func TestWriteDownRestart(t *testing.T) {
	cases := []struct {
		policy    memory.Policy
		devices   int
		outOfTime bool
	}{
		{memory.S3FIFO, 1, false},
		{memory.LRU, 1, false},
		{memory.S3FIFO, 3, false},
		{memory.S3FIFO, 1, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d/outOfTime=%v", tc.policy, tc.devices, tc.outOfTime), func(t *testing.T) {
			devs := memDevices(t, tc.devices)
			c, err := Open(restartOpts(devs, tc.policy))
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
			ctx, cancel := context.WithCancel(context.Background())
			if tc.outOfTime {
				cancel()
			}
			st := c.WriteDown(ctx)
			cancel()
			want := WriteDownStats{Entries: n, HotKeys: n}
			if tc.outOfTime {
				want = WriteDownStats{LeftEntries: n, HotKeys: n}
			}
			if st.Entries != want.Entries || st.LeftEntries != want.LeftEntries || st.HotKeys != n {
				t.Fatalf("write-down %+v, want %+v", st, want)
			}
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			c, err = Open(restartOpts(crashClones(devs), tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			if s := c.Stats(); s.Disk.Recovered != uint64(want.Entries) || s.Disk.RecoveredBatches != 0 {
				t.Fatalf("recovered %d entries, %d batches scanned: want %d from the checkpoint",
					s.Disk.Recovered, s.Disk.RecoveredBatches, want.Entries)
			}
			waitFor(t, func() bool { return c.warm == nil || isClosed(c.warm.done) })
			for i := range n {
				v, tier, ok := c.Get(fmt.Appendf(nil, "k%d", i), nil)
				if tc.outOfTime {
					if ok {
						t.Fatalf("k%d served, never written", i)
					}
					continue
				}
				if !ok || tier != TierMemory || string(v) != string(val(i)) {
					t.Fatalf("k%d: ok=%v tier=%v", i, ok, tier)
				}
			}
		})
	}
}

// TestWarmRace: clients insert, read and remove keys while the warm-up
// runs; a removed key is never served afterwards and a re-inserted one
// reads its new value.
func TestWarmRace(t *testing.T) {
	devs := memDevices(t, 1)
	c, err := Open(restartOpts(devs, memory.S3FIFO))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		c.Insert(fmt.Appendf(nil, "k%d", i), val(i), time.Time{})
	}
	stopClean(t, c)
	o := restartOpts(crashClones(devs), memory.S3FIFO)
	o.WarmRate = 4 << 20 // slow enough that the clients overlap it
	c, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				k := fmt.Appendf(nil, "k%d", i)
				switch i % 3 {
				case 0:
					c.Remove(k)
				case 1:
					c.Insert(k, []byte("new"), time.Time{})
				default:
					c.Get(k, nil)
				}
			}
		}()
	}
	wg.Wait()
	waitFor(t, func() bool { return c.warm == nil || isClosed(c.warm.done) })
	for i := range n {
		v, _, ok := c.Get(fmt.Appendf(nil, "k%d", i), nil)
		switch i % 3 {
		case 0:
			if ok {
				t.Fatalf("k%d removed, then served", i)
			}
		case 1:
			if !ok || string(v) != "new" {
				t.Fatalf("k%d: ok=%v, want the new value", i, ok)
			}
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
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

// TestWriteDownCleanCopyReclaimed: a clean memory entry (read back from
// the disk) whose disk copy the disk has since reclaimed is not on disk:
// the write-down writes it, and it survives the next restart.
func TestWriteDownCleanCopyReclaimed(t *testing.T) {
	devs := memDevices(t, 1)
	c, err := Open(restartOpts(devs, memory.S3FIFO))
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		c.Insert(fmt.Appendf(nil, "k%d", i), val(i), time.Time{})
	}
	stopClean(t, c)
	devs = crashClones(devs)
	c, err = Open(restartOpts(devs, memory.S3FIFO))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.warm == nil || isClosed(c.warm.done) })
	// The disk fills up with other entries (written to it alone) and
	// reclaims its oldest regions: the k's copies go, memory's stay.
	//
	// Each filler is written before the next is queued (drain). Queued
	// without waiting, fillers pile up faster than the flushers write
	// them: the loop sees the k's gone with up to QueueBytes (64 MiB by
	// default) still queued, more than this 32 MiB device holds. Close
	// writes that backlog too, and each flusher writes its own queue: one
	// whose queue is short writes its k's early, and the other's older
	// fillers, written after them, turn the whole device over and reclaim
	// the region holding them. That lost about half the k's once in a
	// hundred or more runs: an eviction of entries by more writes than
	// the device holds, not a write-down that failed to write them.
	e := c.disks.engs[0]
	onDisk := func() bool {
		for i := range n {
			if e.Contains(fmt.Appendf(nil, "k%d", i)) {
				return true
			}
		}
		return false
	}
	filler := make([]byte, 60<<10)
	for i := 0; onDisk(); i++ {
		if i > 10000 {
			t.Fatal("the disk never reclaimed the k's regions")
		}
		if !e.WriteDown(fmt.Appendf(nil, "f%d", i), len(filler), time.Time{}, func(dst []byte) int { return copy(dst, filler) }) {
			t.Fatalf("f%d: the disk refused a filler", i)
		}
		drain(t, e)
	}
	if _, tier, ok := c.Get([]byte("k0"), nil); !ok || tier != TierMemory {
		t.Fatalf("k0: ok=%v tier=%v, want a memory hit", ok, tier)
	}
	stopClean(t, c)
	c, err = Open(restartOpts(crashClones(devs), memory.S3FIFO))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for i := range n {
		k := fmt.Appendf(nil, "k%d", i)
		if v, _, ok := c.Get(k, nil); !ok || string(v) != string(val(i)) {
			t.Errorf("%s: ok=%v after the restart, want its value", k, ok)
		}
	}
}

// stopClean stops c as the binary does: write-down, then Close.
func stopClean(t *testing.T, c *Cache) {
	t.Helper()
	c.WriteDown(context.Background())
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

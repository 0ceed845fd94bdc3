package hybrid

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// TestWaitWriteRoom: with the device's writes held, evictions fill the
// write queue; a wait for room then runs out after its bound; once the
// device writes again the queue drains and the wait returns true. A
// memory-only Cache never waits.
func TestWaitWriteRoom(t *testing.T) {
	m, err := blockdev.NewMem(32<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	f := blockdev.NewFaulty(m, 1)
	c, err := Open(Options{
		Memory: memory.Options{Capacity: 64 << 10, Shards: 1},
		Disk: disk.Options{RegionSize: 1 << 20, BufferSize: 64 << 10, FlushDelay: -1, QueueBytes: 256 << 10,
			ErrorLimit: -1, ReadTimeout: time.Second},
		Device:    f,
		Promotion: PromoteNever,
	})
	if err != nil {
		t.Fatal(err)
	}
	id := f.Inject(blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Hang})
	defer func() { _ = c.Close(context.Background()) }()
	if !c.WaitWriteRoom(16<<10, time.Millisecond) {
		t.Fatal("no room in an empty queue")
	}
	val := bytes.Repeat([]byte("v"), 16<<10)
	for i := 0; c.disks.engs[0].WriteRoom() >= 16<<10; i++ {
		if i == 1000 {
			t.Fatal("the write queue never filled")
		}
		c.Insert(fmt.Appendf(nil, "k%d", i), val, time.Time{})
	}
	t0 := time.Now()
	if c.WaitWriteRoom(16<<10, 30*time.Millisecond) {
		t.Fatal("room in a full queue of a device that does not write")
	}
	if took := time.Since(t0); took < 30*time.Millisecond || took > time.Second {
		t.Fatalf("wait took %v, want about 30ms", took)
	}
	f.Remove(id)
	if !c.WaitWriteRoom(16<<10, 5*time.Second) {
		t.Fatal("no room after the device wrote again")
	}
	t0 = time.Now()
	if c.WaitWriteRoom(512<<10, time.Second) || time.Since(t0) > 100*time.Millisecond {
		t.Fatal("waited for room for more than the queue can ever hold")
	}
	mc, _ := testCache(t, 64<<10, func(o *Options) { o.Device = nil })
	if !mc.WaitWriteRoom(1<<30, time.Hour) {
		t.Fatal("a memory-only cache waited")
	}
}

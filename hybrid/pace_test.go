package hybrid

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"strata/admission"
	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// TestWaitWriteRoom: with the device's writes held, evictions fill the
// write queue; a wait for room then runs out after its bound; once the
// device writes again the queue drains and the wait returns true, for
// more than half the queue too. A memory-only Cache never waits.
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
	if !c.WaitWriteRoom(200<<10, 5*time.Second) { // over half the queue: waits for room in all of it
		t.Fatal("no room for more than half the queue once it drained")
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

// slowWrites is a device whose writes take perKiB a KiB: a disk
// slower than the writer that fills it.
type slowWrites struct {
	blockdev.Device
	perKiB time.Duration
}

func (d *slowWrites) WriteAt(p []byte, off int64) (int, error) {
	time.Sleep(time.Duration(len(p)>>10) * d.perKiB)
	return d.Device.WriteAt(p, off)
}

// TestPacedWriterIsAdmitted: a writer that waits for room before each
// value (a fill streaming a large object) and writes faster than the
// device pushes values out of a small memory tier to a disk whose
// admission rate is far below the writer's. The disk is fresh and has
// bandwidth for all of it, so every value must be admitted past the rate
// (a Fill) and stay readable: the wait must leave the write queue short
// enough for the disk to count as keeping up (Engine.Filling), not just
// short of full, where admission falls back on its rate and drops.
func TestPacedWriterIsAdmitted(t *testing.T) {
	m, err := blockdev.NewMem(64<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	adm, err := admission.New(admission.Options{
		Frequency: admission.FrequencyOptions{Disabled: true},
		RateLimit: admission.RateOptions{BytesPerSecond: 64 << 10, BurstBytes: 128 << 10},
		Fill:      admission.FillOptions{DriveWritesPerDay: 1, DeviceBytes: 64 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(Options{
		Memory: memory.Options{Capacity: 1 << 20, Shards: 1},
		Disk: disk.Options{RegionSize: 1 << 20, BufferSize: 256 << 10, FlushDelay: -1, QueueBytes: 2 << 20,
			ErrorLimit: -1, ReadTimeout: 5 * time.Second},
		Device:    &slowWrites{Device: m, perKiB: 10 * time.Microsecond}, // 100 MB/s
		Admission: adm,
		Promotion: PromoteNever,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	const n, size = 96, 128 << 10
	val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, size) }
	for i := range n {
		if !c.WaitWriteRoom(size+64, 5*time.Second) {
			t.Fatalf("value %d: no room within 5s", i)
		}
		c.Insert(fmt.Appendf(nil, "v%03d", i), val(i), time.Time{})
	}
	lost := 0
	for i := range n {
		got, _, ok := c.Get(fmt.Appendf(nil, "v%03d", i), nil)
		if !ok {
			lost++
			continue
		}
		if !bytes.Equal(got, val(i)) {
			t.Fatalf("value %d read back wrong", i)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d values lost (dropped by admission on the way to disk): %+v", lost, n, c.Stats())
	}
}

package hybrid

import (
	"time"

	"strata/hybrid/disk"
)

// WaitWriteRoom waits until every disk in service has room for n more
// bytes in the part of its write queue where the disk still admits past
// its steady rate (disk.Engine.FillRoom: under half the queue's bound),
// for at most d, and reports whether it got it. A memory-only Cache
// always has room.
//
// It is for writers that can slow down, such as a fill streaming a large
// object from an origin: the memory tier makes room for what they insert
// by evicting to the disks, and past a full write queue those evictions
// are dropped. Waiting for the flushers instead keeps the object whole on
// disk at the device's write speed, as a cache writing a temporary file
// does. The wait is for half the queue, not all of it: past half, the
// flushers count as behind (Engine.Filling), admission falls back on its
// rate, and a writer kept between half and full had most of its
// evictions refused (TestPacedWriterIsAdmitted: 74 of 96 values lost; a
// 256 MiB object fetched after other traffic, 63 of its 256 slices). The
// wait polls (from 50µs, doubling to 2ms): it is taken once per
// large slice, and only while a queue is half full. Every disk, not the one
// the writer's key maps to: what the insert pushes out of memory is other
// keys, bound for any disk. For n over half a queue's bound, the wait is
// for room in the whole queue, as it always was; a queue that could never
// hold n bytes is not waited for: false at once.
func (c *Cache) WaitWriteRoom(n int, d time.Duration) bool {
	if c.disks == nil {
		return true
	}
	for _, e := range c.disks.engs {
		if int64(n) > e.WriteQueueBytes() {
			return false
		}
	}
	var deadline time.Time
	nap := 50 * time.Microsecond
	for {
		full := false
		for _, e := range c.disks.engs {
			if paceRoom(e, n) < int64(n) {
				full = true
				break
			}
		}
		if !full {
			return true
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(d)
		}
		if !now.Before(deadline) {
			return false
		}
		time.Sleep(min(nap, deadline.Sub(now)))
		nap = min(2*nap, 2*time.Millisecond)
	}
}

// paceRoom is the room WaitWriteRoom waits for in e's queue for n bytes:
// under half the queue (FillRoom) when n fits there, else in all of it.
func paceRoom(e *disk.Engine, n int) int64 {
	if int64(n) <= e.FillQueueBytes() {
		return e.FillRoom()
	}
	return e.WriteRoom()
}

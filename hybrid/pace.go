package hybrid

import "time"

// WaitWriteRoom waits until every disk in service has room in its write
// queue for n more bytes (disk.Engine.WriteRoom), for at most d, and
// reports whether it got it. A memory-only Cache always has room.
//
// It is for writers that can slow down, such as a fill streaming a large
// object from an origin: the memory tier makes room for what they insert
// by evicting to the disks, and past a full write queue those evictions
// are dropped. Waiting for the flushers instead keeps the object whole on
// disk at the device's write speed, as a cache writing a temporary file
// does. The wait polls (from 50µs, doubling to 2ms): it is taken once per
// large slice, and only while a queue is full. Every disk, not the one
// the writer's key maps to: what the insert pushes out of memory is other
// keys, bound for any disk. A queue that could never hold n bytes is not
// waited for: false at once.
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
			if e.WriteRoom() < int64(n) {
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

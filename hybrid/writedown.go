package hybrid

import (
	"context"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// WriteDownStats is what WriteDown did.
type WriteDownStats struct {
	Entries, Bytes         int64 // entries queued for the disk, and their key+value bytes
	OnDisk                 int64 // entries the disk already held (clean copies, or written at insert)
	LeftEntries, LeftBytes int64 // entries not written: out of time, too large, or the disk refused them
	HotKeys                int   // keys recorded for the next start's warm-up
}

// WriteDown writes every memory-tier entry that the disk does not already
// hold to the disk tier, hottest first (memory.Cache.Hottest), skipping
// admission: its rate limit guards the device's endurance in steady
// state, while this one-off write at stop is bounded by ctx instead. It
// waits for room in each engine's write queue rather than drop; once ctx
// ends, what is left is only counted. Entries queued here are written by
// Close, which must follow (their bytes are in the flushers' queues until
// then). It also hands each engine the keys of the memory tier that map
// to it, hottest first, for the checkpoint Close writes (disk.Engine.
// SetHotSet), so that the next Open can read them back into memory.
//
// A memory-only Cache has nothing to write. REQUIRES: no other call in
// flight (the caller has stopped its traffic), and Close next.
func (c *Cache) WriteDown(ctx context.Context) WriteDownStats {
	var st WriteDownStats
	if c.disks == nil || c.closed.Load() {
		return st
	}
	c.stopWarm()
	hot := make([][]uint64, len(c.disks.engs))
	c.mem.Hottest(func(ev memory.Evicted, _ bool) bool {
		h := xxhash.Sum64(ev.Key)
		i := 0
		if len(c.disks.engs) > 1 {
			i = jump(h, len(c.disks.engs))
		}
		hot[i] = append(hot[i], h)
		e := c.disks.engs[i]
		switch {
		// Not clean alone: a clean copy's disk entry may have been
		// reclaimed since it was read back.
		case e.Contains(ev.Key):
			st.OnDisk++
		case ctx.Err() == nil && waitRoom(ctx, e, disk.EntrySize(len(ev.Key), ev.ValueLen)) &&
			e.WriteDown(ev.Key, ev.ValueLen, expiryTime(ev.Expiry), ev.CopyValue):
			st.Entries++
			st.Bytes += int64(len(ev.Key) + ev.ValueLen)
		default:
			st.LeftEntries++
			st.LeftBytes += int64(len(ev.Key) + ev.ValueLen)
		}
		return true
	})
	for i, e := range c.disks.engs {
		e.SetHotSet(hot[i])
		st.HotKeys += len(hot[i])
	}
	return st
}

// waitRoom waits until e's write queue has room for n bytes, or ctx ends
// (false). A queue that can never hold n bytes is not waited for.
func waitRoom(ctx context.Context, e *disk.Engine, n int) bool {
	if int64(n) > e.WriteQueueBytes() {
		return false
	}
	nap := 50 * time.Microsecond
	for e.WriteRoom() < int64(n) {
		t := time.NewTimer(nap)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		nap = min(2*nap, 2*time.Millisecond)
	}
	return true
}

package main

import (
	"context"
	"time"
)

// writeDown is the shutdown step between closing the proxy's fills and
// closing the cache: every memory-tier entry the disk does not hold is
// written to it, hottest first (hybrid.Cache.WriteDown), and the memory
// tier's keys are recorded for the next start's warm-up. It ends by ctx,
// leaving the rest of the shutdown time to closing the cache, which
// flushes what was queued and writes the index checkpoint.
func (a *app) writeDown(ctx context.Context) error {
	st := a.cache.WriteDown(ctx)
	a.log.Info("shutdown: memory tier written down", "entries", st.Entries, "bytes", st.Bytes,
		"already_on_disk", st.OnDisk, "left_entries", st.LeftEntries, "left_bytes", st.LeftBytes,
		"hot_keys", st.HotKeys)
	return nil
}

// writeDownBy is when the write-down must end for the shutdown to end by
// deadline: a quarter of the time left (at least a second, at most ten)
// stays for closing the cache.
func writeDownBy(deadline time.Time) time.Time {
	reserve := min(max(time.Until(deadline)/4, time.Second), 10*time.Second)
	return deadline.Add(-reserve)
}

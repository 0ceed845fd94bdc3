package disk

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestDefaultFlushDelayBatchesASteadyStream: a flusher fed one small
// entry per millisecond (what the memory tier's evictions send each
// flusher during a run of 1 KiB misses) writes them as one batch under the
// default FlushDelay, not one write of a few entries every couple of
// milliseconds: each write costs a syscall, goroutine wake-ups and a
// padded block whatever it holds.
func TestDefaultFlushDelayBatchesASteadyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOpts()
		o.Flushers, o.FlushDelay, o.Runtime = 1, 0, RuntimeDisabled
		e := openT(t, newMem(t, 8<<20), o)
		val := make([]byte, 1024)
		const n = 8
		for i := range n {
			if !e.Insert(fmt.Appendf(nil, "k%d", i), val, time.Time{}) {
				t.Fatalf("insert %d refused", i)
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if st := e.Stats(); st.EntriesWritten != n || st.Batches != 1 {
			t.Errorf("%d entries in %d batches, want %d in 1", st.EntriesWritten, st.Batches, n)
		}
		closeT(t, e)
	})
}

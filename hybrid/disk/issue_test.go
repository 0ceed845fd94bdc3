package disk

import (
	"bytes"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// TestIssueCommitForgetsBeforeIndexing: a Get that skips the pending-shard
// mutex (the shard's filter counts no pending key in its slot) must never
// see the index's previous address once the newer item has left the
// pending set. commit used to forget the pending item first and set the
// index second; a Get in between read the older version. The hook runs a
// Get exactly at that point, after the item is forgotten and before the
// shard lock is released.
func TestIssueCommitForgetsBeforeIndexing(t *testing.T) {
	for _, rt := range []RuntimeMode{RuntimeDisabled, RuntimeUnified} {
		t.Run(string(rt), func(t *testing.T) {
			o := testOpts()
			o.Runtime = rt
			e := openT(t, newMem(t, 1024+4<<20), o)
			defer closeT(t, e)
			key := []byte("issue-key")
			h := xxhash.Sum64(key)
			v1, v2 := mval(key, 1, 300), mval(key, 2, 500)
			if !e.Insert(key, v1, time.Time{}) {
				t.Fatal("insert v1 refused")
			}
			settle(t, e)
			got := make(chan []byte, 1)
			e.afterForget = func(hh uint64) {
				if hh != h {
					return
				}
				// In another goroutine: if Get took the shard lock (it
				// must not, the filter is zero) it would wait for us.
				res := make(chan []byte, 1)
				go func() {
					v, _ := e.Get(key, nil)
					res <- v
				}()
				select {
				case v := <-res:
					got <- v
				case <-time.After(5 * time.Second):
					got <- []byte("blocked on the pending lock")
				}
			}
			if !e.Insert(key, v2, time.Time{}) {
				t.Fatal("insert v2 refused")
			}
			var v []byte
			select {
			case v = <-got:
			case <-time.After(20 * time.Second):
				t.Fatal("commit hook never ran")
			}
			settle(t, e)
			if !bytes.Equal(v, v2) {
				ver, _ := checkWhole(key, v)
				t.Fatalf("Get during commit: version %d (%q...), want 2", ver, v[:min(len(v), 8)])
			}
		})
	}
}

package hybrid

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// TestGetOrFetchInlineLeaderMayReuse: a leader whose ctx never ends runs
// the fetch in its own goroutine and returns only after every caller that
// joined it has copied the value, so it may overwrite its buffer at once.
// Under -race a missing wait is a reported race; without it, wrong bytes.
func TestGetOrFetchInlineLeaderMayReuse(t *testing.T) {
	c, _ := testCache(t, 1<<20, nil)
	const waiters = 8
	want := bytes.Repeat([]byte("v"), 4096)
	buf := append([]byte(nil), want...)
	var leaderG atomic.Bool
	fetch := func(ctx context.Context) ([]byte, time.Time, error) {
		leaderG.Store(true)
		deadline := time.Now().Add(10 * time.Second)
		for c.Stats().FetchWaits < waiters && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		return buf, time.Time{}, nil
	}
	var wg sync.WaitGroup
	got := make([][]byte, waiters)
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		v, tier, err := c.GetOrFetch(context.Background(), []byte("k"), nil, fetch)
		if err != nil || tier != TierMiss || !bytes.Equal(v, want) {
			t.Errorf("leader: %v %v %d bytes", err, tier, len(v))
		}
		for i := range buf { // reuse: nobody may still read it
			buf[i] = 'x'
		}
	}()
	for !leaderG.Load() {
		time.Sleep(100 * time.Microsecond)
	}
	for i := range waiters {
		wg.Go(func() {
			v, _, err := c.GetOrFetch(context.Background(), []byte("k"), nil, func(context.Context) ([]byte, time.Time, error) {
				return nil, time.Time{}, fmt.Errorf("waiter %d fetched", i)
			})
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	wg.Wait()
	<-leaderDone
	for i, v := range got {
		if !bytes.Equal(v, want) {
			t.Fatalf("waiter %d got %q…", i, v[:min(len(v), 8)])
		}
	}
	if s := c.Stats(); s.Fetches != 1 {
		t.Fatalf("%d fetches, want 1", s.Fetches)
	}
}

// TestGetOrFetchRechecksOnlyAfterAnEndedCall: the leader's fetch looks in
// the cache again only if a call of the key's shard ended since its miss.
func TestGetOrFetchRechecksOnlyAfterAnEndedCall(t *testing.T) {
	c, _ := testCache(t, 1<<20, nil)
	var fetched atomic.Int32
	fetch := func(context.Context) ([]byte, time.Time, error) {
		fetched.Add(1)
		return []byte("fetched"), time.Time{}, nil
	}
	for _, tc := range []struct {
		name   string
		ended  bool // a call ended after the mark
		stored bool // the key was stored after the miss
		want   string
		fetch  int32
	}{
		{"no call ended", false, false, "fetched", 1},
		{"no call ended, stored by an Insert", false, true, "fetched", 1},
		{"a call ended, nothing stored", true, false, "fetched", 1},
		{"a call ended and stored the key", true, true, "stored", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := []byte("k-" + tc.name)
			h := xxhash.Sum64(key)
			since := c.fetch.mark(h)
			if tc.ended {
				c.fetch.shard(h).ended.Add(1)
			}
			if tc.stored {
				c.Insert(key, []byte("stored"), time.Time{})
			}
			fetched.Store(0)
			call, leader := c.fetch.do(h, key, since, c.refetch(key, fetch), c.Insert, true)
			if !leader || call.err != nil || string(call.value) != tc.want || fetched.Load() != tc.fetch {
				t.Fatalf("leader %v err %v value %q, %d fetches; want %q, %d", leader, call.err, call.value, fetched.Load(), tc.want, tc.fetch)
			}
		})
	}
}

// TestCacheEvictionWakesFlusher: an entry queued by the eviction hook
// (whose wake-up waits for the memory shard lock to be released) is
// written without any later operation or Close.
func TestCacheEvictionWakesFlusher(t *testing.T) {
	c, _ := testCache(t, 64<<10, func(o *Options) { o.Disk.FlushDelay = time.Millisecond })
	for i := range 40 {
		c.Insert(fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{byte(i)}, 4000), time.Time{})
	}
	if c.Stats().EvictedToDisk == 0 {
		t.Fatal("nothing evicted to disk")
	}
	deadline := time.Now().Add(20 * time.Second)
	for s := c.Stats().Disk; s.QueuedBytes != 0 || s.PendingKeys != 0; s = c.Stats().Disk {
		if time.Now().After(deadline) {
			t.Fatalf("evicted entries not written: queued=%d pending=%d", s.QueuedBytes, s.PendingKeys)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

package hybrid

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// FetchFunc loads a value on a miss (from an origin, say). It runs at most
// once at a time per key, on a context of its own: it is not cancelled when
// the caller that started it gives up. The returned value is handed to
// every waiting caller (each appends it to its own dst) and copied into the
// cache, so the function must not modify it after returning: return a
// buffer that is not reused.
type FetchFunc func(ctx context.Context) (value []byte, expiry time.Time, err error)

// fetchFunc is a FetchFunc that may also answer from the cache (re-check).
type fetchFunc func(ctx context.Context) (value []byte, expiry time.Time, tier Tier, err error)

// fetchCall is one in-flight fetch shared by every GetOrFetch caller of a
// key. Its fields are written by the fetching goroutine before done closes
// and only read after.
type fetchCall struct {
	done  chan struct{}
	value []byte
	tier  Tier
	err   error
}

// fetchGroup de-duplicates fetches per key (golang.org/x/sync/singleflight's
// idea), with two differences: the fetch runs in a goroutine owned by the
// group, so any caller may leave on its own context without cancelling it
// for the others, and close waits for every fetch it started.
type fetchGroup struct {
	timeout time.Duration
	base    context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	shards  [64]fetchShard
}

type fetchShard struct {
	mu    sync.Mutex
	calls map[string]*fetchCall
	_     [48]byte // keep shard locks on separate cache lines
}

func newFetchGroup(timeout time.Duration) *fetchGroup {
	g := &fetchGroup{timeout: timeout}
	g.base, g.cancel = context.WithCancel(context.Background())
	for i := range g.shards {
		g.shards[i].calls = make(map[string]*fetchCall)
	}
	return g
}

// do returns the in-flight call for key and false, or starts one running
// fetch and returns it and true. store is called with a successful fetched
// value before the waiters are released.
func (g *fetchGroup) do(h uint64, key []byte, fetch fetchFunc, store func(key, value []byte, expiry time.Time)) (*fetchCall, bool) {
	s := &g.shards[h%uint64(len(g.shards))]
	s.mu.Lock()
	if c, ok := s.calls[string(key)]; ok {
		s.mu.Unlock()
		return c, false
	}
	c := &fetchCall{done: make(chan struct{})}
	k := string(key)
	s.calls[k] = c
	g.wg.Add(1)
	s.mu.Unlock()
	go g.run(s, k, c, fetch, store)
	return c, true
}

func (g *fetchGroup) run(s *fetchShard, key string, c *fetchCall, fetch fetchFunc, store func(key, value []byte, expiry time.Time)) {
	defer g.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			c.err = fmt.Errorf("hybrid: fetch panicked: %v\n%s", r, debug.Stack())
		}
		s.mu.Lock()
		delete(s.calls, key)
		s.mu.Unlock()
		close(c.done)
	}()
	ctx, cancel := context.WithTimeout(g.base, g.timeout)
	defer cancel()
	v, exp, tier, err := fetch(ctx)
	if err != nil {
		c.err = err
		return
	}
	// Not copied: FetchFunc's contract is that v is not modified after
	// return, every waiter appends it to its own dst, and store copies.
	c.value, c.tier = v, tier
	if tier == TierMiss {
		store([]byte(key), c.value, exp)
	}
}

// close cancels running fetches' contexts and waits for them to return.
func (g *fetchGroup) close(ctx context.Context) error {
	g.cancel()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("hybrid: waiting for fetches: %w", ctx.Err())
	}
}

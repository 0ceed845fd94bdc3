package hybrid

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// FetchFunc loads a value on a miss (from an origin, say). It runs at most
// once at a time per key, on a context of its own: it is not cancelled when
// the caller that started it gives up. The returned value is handed to
// every waiting caller (each appends it to its own dst) and copied into the
// cache, so the function must not modify it after returning: return a
// buffer that is not reused, or one its owner reuses only after a
// GetOrFetch that ran the fetch inline has returned (see GetOrFetch).
type FetchFunc func(ctx context.Context) (value []byte, expiry time.Time, err error)

// fetchFunc is a FetchFunc that may also answer from the cache (recheck).
type fetchFunc func(ctx context.Context, recheck bool) (value []byte, expiry time.Time, tier Tier, err error)

// fetchCall is one in-flight fetch shared by every GetOrFetch caller of a
// key. Its fields are written by the fetching goroutine before done closes
// and only read after.
type fetchCall struct {
	done  chan struct{}
	value []byte
	tier  Tier
	err   error
	// readers counts the callers that joined the call (not its leader)
	// and have not yet copied value or left: an inline leader waits for
	// them before it returns, so that the fetched buffer is no longer
	// referenced once GetOrFetch has returned to it (see GetOrFetch).
	readers sync.WaitGroup
}

// fetchGroup de-duplicates fetches per key (golang.org/x/sync/singleflight's
// idea), with two differences: the fetch runs in a goroutine owned by the
// group, so any caller may leave on its own context without cancelling it
// for the others, and close waits for every fetch it started. A leader
// that cannot leave (its context never ends) runs the fetch itself
// (do's inline): it would only wait for the goroutine otherwise.
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
	// ended counts the calls of this shard that ended (bumped under mu
	// after the call stored its value): see do's since.
	ended atomic.Uint64
	_     [40]byte // keep shard locks on separate cache lines
}

func newFetchGroup(timeout time.Duration) *fetchGroup {
	g := &fetchGroup{timeout: timeout}
	g.base, g.cancel = context.WithCancel(context.Background())
	for i := range g.shards {
		g.shards[i].calls = make(map[string]*fetchCall)
	}
	return g
}

// mark returns the count of ended calls in key hash h's shard, for do's
// since: read it before the lookup that missed.
func (g *fetchGroup) mark(h uint64) uint64 { return g.shard(h).ended.Load() }

func (g *fetchGroup) shard(h uint64) *fetchShard { return &g.shards[h%uint64(len(g.shards))] }

// do returns the in-flight call for key and false, or starts one running
// fetch and returns it and true. store is called with a successful fetched
// value before the waiters are released. A caller that gets false must
// call c.readers.Done once it has copied c.value or stopped waiting.
//
// since is mark's count before the caller's cache lookup missed: if no
// call of the shard ended since, none can have stored key after that
// lookup, and fetch runs without looking in the cache again (recheck
// false). inline runs a started fetch in the calling goroutine: do returns
// once it is done and every caller that joined it has copied its value.
func (g *fetchGroup) do(h uint64, key []byte, since uint64, fetch fetchFunc, store func(key, value []byte, expiry time.Time), inline bool) (*fetchCall, bool) {
	s := g.shard(h)
	s.mu.Lock()
	if c, ok := s.calls[string(key)]; ok {
		c.readers.Add(1)
		s.mu.Unlock()
		return c, false
	}
	recheck := s.ended.Load() != since
	c := &fetchCall{done: make(chan struct{})}
	k := string(key)
	s.calls[k] = c
	g.wg.Add(1)
	s.mu.Unlock()
	if inline {
		g.run(s, k, c, recheck, fetch, store)
		c.readers.Wait()
	} else {
		go g.run(s, k, c, recheck, fetch, store)
	}
	return c, true
}

func (g *fetchGroup) run(s *fetchShard, key string, c *fetchCall, recheck bool, fetch fetchFunc, store func(key, value []byte, expiry time.Time)) {
	defer g.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			c.err = fmt.Errorf("hybrid: fetch panicked: %v\n%s", r, debug.Stack())
		}
		s.mu.Lock()
		delete(s.calls, key)
		s.ended.Add(1)
		s.mu.Unlock()
		close(c.done)
	}()
	ctx, cancel := context.WithTimeout(g.base, g.timeout)
	defer cancel()
	v, exp, tier, err := fetch(ctx, recheck)
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

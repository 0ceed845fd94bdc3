package hybrid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/admission"
	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// testCache opens a Cache with a small memory tier over a MemDevice.
func testCache(t *testing.T, memBytes int64, mutate func(*Options)) (*Cache, *blockdev.MemDevice) {
	t.Helper()
	dev, err := blockdev.NewMem(32<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{
		Memory: memory.Options{Capacity: memBytes, Shards: 1},
		Disk:   disk.Options{RegionSize: 1 << 20, BufferSize: 256 << 10, FlushDelay: -1, ReadTimeout: 30 * time.Second},
		Device: dev,
	}
	if mutate != nil {
		mutate(&o)
	}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, dev
}

func TestCacheTiers(t *testing.T) {
	c, _ := testCache(t, 64<<10, nil)
	val := bytes.Repeat([]byte("v"), 1000)
	c.Insert([]byte("k0"), val, time.Time{})
	// Push k0 (never read, so S3-FIFO lets it go first) out of memory;
	// write-on-eviction takes it to disk.
	for i := 1; i < 200; i++ {
		c.Insert(fmt.Appendf(nil, "k%d", i), val, time.Time{})
	}
	v, tier, ok := c.Get([]byte("k0"), nil)
	if !ok || tier != TierDisk || !bytes.Equal(v, val) {
		t.Fatalf("after eviction: ok=%v tier=%v stats=%+v", ok, tier, c.Stats())
	}
	// Promoted on its second disk hit (the default): the next one is
	// from memory.
	if _, tier, _ = c.Get([]byte("k0"), nil); tier != TierDisk {
		t.Fatalf("second hit: tier %v", tier)
	}
	if _, tier, _ = c.Get([]byte("k0"), nil); tier != TierMemory {
		t.Fatalf("promotion: tier %v", tier)
	}
	s := c.Stats()
	if s.EvictedToDisk == 0 || s.Promotions == 0 || !s.DiskEnabled {
		t.Fatalf("stats %+v", s)
	}
	c.Remove([]byte("k0"))
	if _, _, ok := c.Get([]byte("k0"), nil); ok {
		t.Fatal("removed key still served")
	}
}

// TestCacheOverwriteNeverResurrects: a newer value that admission refuses
// on eviction must not let the older disk copy come back.
func TestCacheOverwriteNeverResurrects(t *testing.T) {
	var refuse atomic.Bool
	c, _ := testCache(t, 64<<10, func(o *Options) { o.Admission = &toggleAdmission{refuse: &refuse} })
	old := bytes.Repeat([]byte("o"), 1000)
	c.Insert([]byte("k"), old, time.Time{})
	fill := func(tag string) {
		for i := 0; i < 200; i++ {
			c.Insert(fmt.Appendf(nil, "%s%d", tag, i), old, time.Time{})
		}
	}
	fill("a")
	if _, tier, ok := c.Get([]byte("k"), nil); !ok || tier != TierDisk {
		t.Fatalf("setup: k not on disk (tier %v)", tier)
	}
	c.Insert([]byte("k"), []byte("new"), time.Time{})
	refuse.Store(true)
	fill("b")
	if v, _, ok := c.Get([]byte("k"), nil); ok && !bytes.Equal(v, []byte("new")) {
		t.Fatalf("older value resurfaced: %q", v[:8])
	}
}

type toggleAdmission struct{ refuse *atomic.Bool }

func (a *toggleAdmission) Admit(uint64, int) admission.Decision {
	if a.refuse.Load() {
		return admission.Rejected
	}
	return admission.Admitted
}
func (a *toggleAdmission) Record(uint64) {}
func (a *toggleAdmission) Charge(int)    {}

func TestCacheExpiry(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Unix(1000, 0).UnixNano())
	c, _ := testCache(t, 64<<10, func(o *Options) {
		o.Memory.Now = now.Load
		o.Disk.Now = func() time.Time { return time.Unix(0, now.Load()) }
		o.WritePolicy = WriteOnInsertion
	})
	c.Insert([]byte("k"), []byte("v"), time.Unix(1010, 0))
	if _, _, ok := c.Get([]byte("k"), nil); !ok {
		t.Fatal("fresh entry missed")
	}
	now.Store(time.Unix(1011, 0).UnixNano())
	if _, _, ok := c.Get([]byte("k"), nil); ok {
		t.Fatal("expired entry served")
	}
}

func TestCacheBigValueGoesToDisk(t *testing.T) {
	c, _ := testCache(t, 64<<10, nil)
	big := bytes.Repeat([]byte("b"), 100<<10) // over a quarter of the memory tier
	c.Insert([]byte("big"), big, time.Time{})
	v, tier, ok := c.Get([]byte("big"), nil)
	if !ok || tier != TierDisk || !bytes.Equal(v, big) {
		t.Fatalf("ok=%v tier=%v", ok, tier)
	}
}

func TestCacheMemoryOnly(t *testing.T) {
	c, err := Open(Options{Memory: memory.Options{Capacity: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	c.Insert([]byte("k"), []byte("v"), time.Time{})
	if v, tier, ok := c.Get([]byte("k"), nil); !ok || tier != TierMemory || string(v) != "v" {
		t.Fatal("memory-only cache lost a value")
	}
	if s := c.Stats(); s.DiskEnabled {
		t.Fatal("disk enabled without a device")
	}
}

func TestCacheOptionsValidate(t *testing.T) {
	o := Options{WritePolicy: "sometimes", FetchTimeout: -1, Memory: memory.Options{Policy: "random"},
		Promotion: "third-hit"}
	o.EnsureDefaults()
	err := o.Validate()
	for _, want := range []string{"write_policy", "fetch_timeout", "random", "third-hit"} {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("Validate() = %v, want it to name %q", err, want)
		}
	}
}

func TestGetOrFetchDeduplicates(t *testing.T) {
	c, _ := testCache(t, 1<<20, nil)
	var calls atomic.Int32
	release := make(chan struct{})
	fetch := func(ctx context.Context) ([]byte, time.Time, error) {
		calls.Add(1)
		<-release
		return []byte("value"), time.Time{}, nil
	}
	const n = 50
	var wg sync.WaitGroup
	results := make([][]byte, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := c.GetOrFetch(context.Background(), []byte("k"), nil, fetch)
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		}()
	}
	// Wait until the fetch is running, then let it finish.
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("fetch ran %d times", calls.Load())
	}
	for i, v := range results {
		if string(v) != "value" {
			t.Fatalf("caller %d got %q", i, v)
		}
	}
	if v, tier, ok := c.Get([]byte("k"), nil); !ok || tier != TierMemory || string(v) != "value" {
		t.Fatal("fetched value not cached")
	}
}

func TestGetOrFetchCallerLeavesFetchGoesOn(t *testing.T) {
	c, _ := testCache(t, 1<<20, nil)
	release := make(chan struct{})
	started := make(chan struct{})
	fetch := func(ctx context.Context) ([]byte, time.Time, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
		return []byte("v"), time.Time{}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.GetOrFetch(ctx, []byte("k"), nil, fetch)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("leaving caller got %v", err)
	}
	// A second caller joins the same fetch, which was not cancelled.
	done := make(chan []byte)
	go func() {
		v, _, _ := c.GetOrFetch(context.Background(), []byte("k"), nil, fetch)
		done <- v
	}()
	close(release)
	if v := <-done; string(v) != "v" {
		t.Fatalf("second caller got %q", v)
	}
}

func TestGetOrFetchErrorNotCached(t *testing.T) {
	c, _ := testCache(t, 1<<20, nil)
	boom := errors.New("origin down")
	_, _, err := c.GetOrFetch(context.Background(), []byte("k"), nil, func(context.Context) ([]byte, time.Time, error) {
		return nil, time.Time{}, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if _, _, ok := c.Get([]byte("k"), nil); ok {
		t.Fatal("failed fetch cached")
	}
	if s := c.Stats(); s.FetchErrors != 1 || s.Fetches != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestCacheModel runs random inserts, gets and removes from many goroutines
// beside a map: each goroutine owns its keys, so every hit must return
// exactly the newest value that goroutine set (misses are legal: tiers
// evict and admission drops).
func TestCacheModel(t *testing.T) {
	for _, tc := range []struct {
		wp WritePolicy
		pr Promotion
	}{
		{WriteOnEviction, PromoteSecondHit}, {WriteOnInsertion, PromoteSecondHit},
		{WriteOnEviction, PromoteFirstHit}, {WriteOnInsertion, PromoteFirstHit},
	} {
		wp := tc.wp
		t.Run(string(wp)+"/"+string(tc.pr), func(t *testing.T) {
			c, _ := testCache(t, 256<<10, func(o *Options) { o.WritePolicy, o.Promotion = wp, tc.pr })
			ops := 3000
			if testing.Short() {
				ops = 500
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cacheModelWorker(t, c, g, ops)
				}()
			}
			wg.Wait()
		})
	}
}

func cacheModelWorker(t *testing.T, c *Cache, g, ops int) {
	rng := rand.New(rand.NewPCG(uint64(g), 7))
	model := map[string][]byte{}
	var dst []byte
	for i := range ops {
		key := fmt.Sprintf("g%d-k%d", g, rng.IntN(64))
		switch r := rng.IntN(10); {
		case r < 4:
			v := bytes.Repeat([]byte{byte(i)}, 1+rng.IntN(8<<10))
			v = fmt.Appendf(v, "|%s|%d", key, i)
			c.Insert([]byte(key), v, time.Time{})
			model[key] = v
		case r < 9:
			got, _, ok := c.Get([]byte(key), dst[:0])
			dst = got
			want, live := model[key]
			if ok && (!live || !bytes.Equal(got, want)) {
				t.Errorf("key %s: got %d bytes, want %d (live %v)", key, len(got), len(want), live)
				return
			}
		default:
			c.Remove([]byte(key))
			delete(model, key)
		}
	}
}

func TestCacheHitAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	c, _ := testCache(t, 1<<20, func(o *Options) { o.Promotion = PromoteNever })
	c.Insert([]byte("mem"), []byte("value"), time.Time{})
	big := bytes.Repeat([]byte("d"), 200<<10)
	c.Insert([]byte("disk"), big, time.Time{}) // too big for memory: disk
	dst := make([]byte, 0, 256<<10)
	for _, key := range []string{"mem", "disk"} {
		k := []byte(key)
		if _, _, ok := c.Get(k, dst); !ok {
			t.Fatalf("%s: miss", key)
		}
		if n := testing.AllocsPerRun(100, func() { c.Get(k, dst) }); n != 0 {
			t.Errorf("%s hit: %v allocs", key, n)
		}
	}
}

// TestCacheContains: Contains answers for memory entries and for entries
// only the disk holds, says no after Remove and for unknown keys, and
// counts no hit (a probe must not change what the memory tier keeps).
func TestCacheContains(t *testing.T) {
	c, _ := testCache(t, 64<<10, nil)
	val := bytes.Repeat([]byte("v"), 1000)
	c.Insert([]byte("k0"), val, time.Time{})
	if !c.Contains([]byte("k0")) || c.Contains([]byte("nope")) {
		t.Fatal("memory: Contains wrong")
	}
	before := c.Stats().Memory.Hits
	for i := 1; i < 200; i++ {
		c.Insert(fmt.Appendf(nil, "k%d", i), val, time.Time{})
	}
	if c.mem.Contains([]byte("k0")) {
		t.Fatal("setup: k0 still in memory")
	}
	if !c.Contains([]byte("k0")) {
		t.Fatal("disk: Contains says no for an evicted key on disk")
	}
	if _, tier, ok := c.Get([]byte("k0"), nil); !ok || tier != TierDisk {
		t.Fatalf("k0 not readable from disk: %v", tier)
	}
	if got := c.Stats().Memory.Hits; got != before {
		t.Fatalf("Contains counted hits: %d → %d", before, got)
	}
	c.Remove([]byte("k0"))
	if c.Contains([]byte("k0")) {
		t.Fatal("Contains after Remove")
	}
}

package hybrid

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/admission"
	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// Cache is the hybrid cache: a Memory tier in front of an optional disk
// tier of one Engine per device, joined as DESIGN.md ("The hybrid cache")
// describes. Each key's disk operations go to one engine, picked by a
// stable hash of the key (devices.go).
//
// Get asks memory, then disk (the engine's pending set, index and read
// pool); a disk hit is copied into memory as Options.Promotion says (by
// default on the key's second recent disk hit, cache_promote.go). Insert puts an
// entry in memory; with WriteOnEviction it reaches the disk only when the
// memory tier evicts it (through admission, which may refuse), with
// WriteOnInsertion at once as well. An entry the memory tier refuses (too
// big for a shard) goes straight to disk. Remove hides a key in both tiers,
// durably on disk (a tombstone).
//
// Consistency. With one writer per key, a key never reads back an older
// value than the newest one inserted: Insert of a key the disk holds
// removes the disk copy, so that a newer value refused by admission on
// eviction cannot leave an older one to resurface; a promotion is stored
// only if memory has no live entry for the key (memory.Cache.SetClean), so it
// never replaces a newer value. A promoted entry is a clean copy of the
// disk's, so its eviction writes nothing. Misses are always allowed: an
// Insert racing with an eviction of the same key may lose both. Concurrent
// Inserts of one key from several goroutines have no defined winner, and
// in a narrow race (an Insert's value evicted and refused while a
// promotion of the older disk copy is in flight) an older value may be
// served again; callers that mix versions (the proxy's slices) carry their
// own validator to detect it.
//
// Ownership. Values are copied in on Insert and appended to the caller's
// dst on Get: returned bytes belong to the caller for good. Lend (lend.go)
// lends a large memory hit's bytes instead, until the caller releases them.
//
// Concurrency. All methods are safe for concurrent use. Close must not run
// concurrently with other calls: the caller stops its traffic first (the
// proxy shuts its listener down before closing the cache); calls after
// Close are misses and no-ops.
type Cache struct {
	opts   Options
	mem    *memory.Cache
	disks  *devices // nil: memory only
	fetch  *fetchGroup
	promo  *promoteFilter // PromoteSecondHit's doorkeeper
	warm   *warmer        // the hot set's read-back after Open; nil if none
	closed atomic.Bool
	c      cacheCounters
}

type cacheCounters struct {
	promotions, evictedToDisk, directToDisk atomic.Uint64
	fetches, fetchErrors, fetchWaits        atomic.Uint64
	// admission decisions, by kind (admitter.count)
	admitRate, admitFill, refuseCold, refuseRate, refuseBudget atomic.Uint64
}

// Open builds a Cache from opts, recovering the disk tier from its device.
func Open(opts Options) (*Cache, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		closeDevice(opts)
		return nil, err
	}
	c := &Cache{opts: opts, fetch: newFetchGroup(opts.FetchTimeout),
		promo: newPromoteFilter(opts.Memory.Capacity)}
	if devs := opts.devices(); len(devs) > 0 {
		if opts.Admission != nil {
			opts.Disk.Admission = newAdmitter(opts.Admission, &c.c)
		}
		d, err := openEngines(devs, opts.Disk)
		if err != nil {
			closeDevice(opts)
			return nil, err
		}
		c.disks = d
		if opts.WritePolicy == WriteOnEviction {
			opts.Memory.OnEvict = c.onEvict
		}
	}
	m, err := memory.New(opts.Memory)
	if err != nil {
		if c.disks != nil {
			c.disks.closeEngines(context.Background())
		}
		closeDevice(opts)
		return nil, err
	}
	c.mem = m
	c.startWarm()
	return c, nil
}

// closeDevice closes every device opts holds, as Open promises when it
// fails.
func closeDevice(opts Options) {
	for _, dev := range append([]blockdev.Device{opts.Device}, opts.Devices...) {
		if dev != nil {
			_ = dev.Close()
		}
	}
}

// Get appends key's value to dst and says which tier answered. A miss
// returns dst unchanged and TierMiss. A hit allocates nothing when dst has
// room for the value.
func (c *Cache) Get(key, dst []byte) ([]byte, Tier, bool) {
	if c.closed.Load() {
		return dst, TierMiss, false
	}
	if v, _, ok := c.mem.Get(key, dst); ok {
		c.record(key)
		return v, TierMemory, true
	}
	if c.disks == nil {
		return dst, TierMiss, false
	}
	v, expiry, ok := c.disks.of(key).GetWithExpiry(key, dst)
	if !ok {
		return dst, TierMiss, false
	}
	c.record(key)
	c.promote(key, v[len(dst):], expiry)
	return v, TierDisk, true
}

// Contains reports whether a Get of key may hit, without reading or
// copying the value: memory holds it live, or the disk index (or its write
// queue) has it. It never says no for a key Get would find in memory; a
// disk entry it reports may still miss when read (damage, a hash
// collision, a failing device), so callers that must not fail after
// Contains said yes need a fallback.
func (c *Cache) Contains(key []byte) bool {
	if c.closed.Load() {
		return false
	}
	return c.mem.Contains(key) || (c.disks != nil && c.disks.of(key).Contains(key))
}

// Insert stores a copy of key → value until expiry (zero: no expiry).
func (c *Cache) Insert(key, value []byte, expiry time.Time) {
	c.InsertParts(key, value, nil, nil, expiry)
}

// InsertParts is Insert of the value head|body|tail. Each part is copied
// once, into the memory tier's blocks (or the disk's write queue), so a
// caller holding a value in parts (the proxy's record header, a body in
// its fill buffer, a checksum) need not join them into one buffer first.
func (c *Cache) InsertParts(key, head, body, tail []byte, expiry time.Time) {
	if c.closed.Load() {
		return
	}
	c.record(key)
	if c.disks == nil {
		c.mem.SetParts(key, head, body, tail, expiry)
		return
	}
	e := c.disks.of(key)
	if c.opts.WritePolicy == WriteOnInsertion {
		c.mem.SetParts(key, head, body, tail, expiry)
		insertParts(e, key, head, body, tail, expiry)
		return
	}
	stored := c.mem.SetParts(key, head, body, tail, expiry)
	c.disks.kick() // the flushers the eviction hook queued for (onEvict)
	if !stored {
		// Too big for memory: straight to disk, which supersedes (or, if
		// refused, hides) an older copy there.
		c.c.directToDisk.Add(1)
		insertParts(e, key, head, body, tail, expiry)
		return
	}
	// The memory tier now holds the newest value; an older copy on disk
	// must go, or it would resurface if this one is later refused on its
	// way down. Set first, then remove: an eviction of the older value
	// racing with this Insert has queued its disk write before Set took
	// the shard lock, so the remove lands after it.
	if e.Contains(key) {
		e.Remove(key)
	}
}

// insertParts queues key → head|body|tail on e, copying each part once.
func insertParts(e *disk.Engine, key, head, body, tail []byte, expiry time.Time) {
	if len(body) == 0 && len(tail) == 0 {
		e.Insert(key, head, expiry)
		return
	}
	e.InsertFrom(key, len(head)+len(body)+len(tail), expiry, func(dst []byte) int {
		n := copy(dst, head)
		n += copy(dst[n:], body)
		return n + copy(dst[n:], tail)
	})
}

// onEvict is the memory tier's OnEvict under WriteOnEviction. It runs under
// a memory shard lock: disk.Engine.InsertFromLater never blocks, asks
// admission with the key and size first, and only then copies the value,
// once, from the memory tier's blocks into a flusher's write buffer, or
// into its write queue when the flusher is busy (disk/direct.go).
// Gathering every evicted value before admission refused about half of
// them took 15% of the process's CPU. The flusher is not woken under the lock:
// every call that may evict (Insert, promote) kicks every engine after
// it (devices.kick).
func (c *Cache) onEvict(ev memory.Evicted) {
	if c.disks.of(ev.Key).InsertFromLater(ev.Key, ev.ValueLen, expiryTime(ev.Expiry), ev.CopyValue) {
		c.c.evictedToDisk.Add(1)
	}
}

// Remove deletes key from both tiers; on disk durably.
func (c *Cache) Remove(key []byte) {
	if c.closed.Load() {
		return
	}
	c.mem.Delete(key)
	if c.disks != nil {
		c.disks.of(key).Remove(key)
	}
}

// GetOrFetch is Get, and on a miss runs fetch — once per key however many
// callers miss it at the same time — inserts its value and returns it to
// every caller (TierMiss). A caller whose ctx ends leaves with ctx's error;
// the fetch goes on for the others, on its own context bounded by
// Options.FetchTimeout. A failed fetch is returned to every caller waiting
// for it and nothing is cached.
//
// A leading caller whose ctx can never end (ctx.Done() is nil, as for
// context.Background) runs fetch itself, in its own goroutine, and returns
// only once no other caller still reads the value fetch returned: from
// then on the cache holds no reference to it, and the caller may reuse the
// buffer for its next fetch.
func (c *Cache) GetOrFetch(ctx context.Context, key, dst []byte, fetch FetchFunc) ([]byte, Tier, error) {
	h := xxhash.Sum64(key)
	since := c.fetch.mark(h)
	if v, tier, ok := c.Get(key, dst); ok {
		return v, tier, nil
	}
	if c.closed.Load() {
		return dst, TierMiss, ErrClosed
	}
	// A caller that cannot leave would only wait for the fetch's goroutine:
	// it runs the fetch itself, with no goroutine to start and none to be
	// scheduled before the fetch begins (that hand-off was most
	// of the miss latency's tail on a busy machine).
	inline := ctx.Done() == nil
	call, leader := c.fetch.do(h, key, since, c.refetch(key, fetch), c.Insert, inline)
	if leader {
		c.c.fetches.Add(1)
	} else {
		c.c.fetchWaits.Add(1)
		defer call.readers.Done()
	}
	select {
	case <-call.done:
	case <-ctx.Done():
		return dst, TierMiss, ctx.Err()
	}
	if call.err != nil {
		if leader {
			c.c.fetchErrors.Add(1)
		}
		return dst, TierMiss, call.err
	}
	return append(dst, call.value...), call.tier, nil
}

// refetch wraps fetch so that the shared call first looks in the cache
// again when asked (recheck): another call for the key may have filled it
// between our miss and the start of this one (groupcache's load does the
// same). fetchGroup.do asks only if a call of the key's shard ended since
// the miss: nearly never, which spares the miss path a second lookup of
// both tiers.
func (c *Cache) refetch(key []byte, fetch FetchFunc) fetchFunc {
	k := append([]byte(nil), key...)
	return func(ctx context.Context, recheck bool) ([]byte, time.Time, Tier, error) {
		if recheck {
			if v, tier, ok := c.Get(k, nil); ok {
				return v, time.Time{}, tier, nil
			}
		}
		v, exp, err := fetch(ctx)
		return v, exp, TierMiss, err
	}
}

// Close stops the hot set's warm-up and fetches, flushes and closes the
// disk tier (its engines, each writing its index checkpoint, and devices,
// concurrently), and releases the memory tier. Entries only in memory are
// not written to disk unless WriteDown ran first. A device that does not answer holds
// Close at most a second past ctx (see disk.Engine.Close); it is then left
// open, and the error wraps ErrDeviceTimeout. REQUIRES: no other call in
// flight.
func (c *Cache) Close(ctx context.Context) error {
	if c.closed.Swap(true) {
		return ErrClosed
	}
	c.stopWarm()
	var errs []error
	if err := c.fetch.close(ctx); err != nil {
		errs = append(errs, err)
	}
	if c.disks != nil {
		errs = append(errs, c.disks.close(ctx))
	}
	if err := c.mem.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// record tells the admission controller of an access to key.
func (c *Cache) record(key []byte) {
	if c.opts.Admission != nil {
		c.opts.Admission.Record(xxhash.Sum64(key))
	}
}

// admitter adapts an admission.Controller to the engine's FillAdmitter
// and counts its decisions by kind. One serves every engine: each passes
// itself to AdmitTo as the device.
type admitter struct {
	c  admission.Controller
	dc admission.DeviceController // c, if it weighs the device; else nil
	n  *cacheCounters
}

var _ disk.FillAdmitter = (*admitter)(nil)

func newAdmitter(c admission.Controller, n *cacheCounters) *admitter {
	dc, _ := c.(admission.DeviceController)
	return &admitter{c: c, dc: dc, n: n}
}

func (a *admitter) Admit(hash uint64, size int) bool { return a.count(a.c.Admit(hash, size)) }
func (a *admitter) Written(bytes int)                { a.c.Charge(bytes) }

func (a *admitter) AdmitTo(dev interface{ Filling() bool }, hash uint64, size int) bool {
	if a.dc == nil {
		return a.Admit(hash, size)
	}
	return a.count(a.dc.AdmitTo(dev, hash, size))
}

// count adds d to its counter and reports whether it admits.
func (a *admitter) count(d admission.Decision) bool {
	switch d {
	case admission.Admitted:
		a.n.admitRate.Add(1)
	case admission.Fill:
		a.n.admitFill.Add(1)
	case admission.Throttled:
		a.n.refuseRate.Add(1)
	case admission.OverBudget:
		a.n.refuseBudget.Add(1)
	default:
		a.n.refuseCold.Add(1)
	}
	return d.OK()
}

func expiryTime(unixNanos int64) time.Time {
	if unixNanos == 0 {
		return time.Time{}
	}
	return time.Unix(0, unixNanos)
}

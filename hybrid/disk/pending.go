package disk

import (
	"bytes"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// item is one queued write: an entry or a tombstone, with its own copy
// of key and value. It is referenced by its flusher's queue and buffer and,
// while it is the newest operation for its key, by the pending set.
//
// A direct item (direct.go) has no copy of its own: Insert serialised the
// entry straight into its flusher's filling buffer, and kv is the key and
// value there. Those bytes stay put until the buffer's write has been
// committed or failed, which is also when the item leaves the pending
// set, so a pending read of it is served from the buffer.
type item struct {
	hash   uint64
	seq    uint64
	expiry int64 // unix nanoseconds, 0 = never
	tomb   bool
	tries  uint8 // tombstones for failed writes: earlier failed attempts
	klen   int
	kv     []byte      // key then value
	size   int64       // bytes charged to the queue bound
	direct bool        // kv is in a flusher's buffer, not owned
	shadow *shadowWait // a reclaim's shadow tombstone: released when freed
}

func (it *item) key() []byte   { return it.kv[:it.klen] }
func (it *item) value() []byte { return it.kv[it.klen:] }

// Items are pooled with their kv buffers, in power-of-two capacity classes
// from itemMin to itemMax bytes, so that an Insert allocates nothing
// in the steady state. An item's life ends when its write has been
// committed or failed (commit, fail): by then neither the pending set nor a
// queue nor a buffer refers to it. Pooling rounds kv up to a power of two,
// so the memory behind QueueBytes (which counts entry sizes) is at most
// twice that bound.
const (
	itemMinShift = 6  // 64 B
	itemMaxShift = 23 // 8 MiB
)

var itemPools [itemMaxShift - itemMinShift + 1]sync.Pool

func itemClass(n int) int {
	if n <= 1<<itemMinShift {
		return 0
	}
	return bits.Len(uint(n-1)) - itemMinShift
}

// newItem returns a zeroed item whose kv has length n.
func newItem(n int) *item {
	c := itemClass(n)
	if c >= len(itemPools) {
		return &item{kv: make([]byte, n)}
	}
	if x := itemPools[c].Get(); x != nil {
		it := x.(*item)
		it.kv = it.kv[:n]
		return it
	}
	return &item{kv: make([]byte, n, 1<<(c+itemMinShift))}
}

// directItems pools the items of direct inserts, which own no kv.
var directItems = sync.Pool{New: func() any { return new(item) }}

// newDirectItem returns a zeroed direct item.
func newDirectItem() *item {
	it := directItems.Get().(*item)
	it.direct = true
	return it
}

// freeItem returns it to its pool. REQUIRES: nothing refers to it.
func freeItem(it *item) {
	if it.shadow != nil {
		it.shadow.release()
	}
	if it.direct {
		*it = item{}
		directItems.Put(it)
		return
	}
	kv := it.kv
	*it = item{}
	c := itemClass(cap(kv))
	if c < len(itemPools) && cap(kv) == 1<<(c+itemMinShift) {
		it.kv = kv[:0]
		itemPools[c].Put(it)
	}
}

// pending maps key hash → the newest queued operation for that key, so a
// Get right after an Insert hits and a Get right after a Remove misses. A
// shard's mutex is also the per-key serialisation point between Insert,
// Remove, the flusher's commit (index update) and reinsertion.
type pending struct {
	shards [pendingShards]pendingShard
}

const pendingShards = 256

// A Get looks at the pending set first, but nearly always finds nothing
// there: so each shard keeps a small counting filter, pendingSlots
// counters of the keys pending per slot of the hash, written under mu and
// read without it. A Get whose slot counts zero skips the mutex. (Insert
// bumps the counter before it returns and commit drops it after the index
// holds the new address, so a Get that reads zero and then asks the index
// sees what a Get under the lock would have.)
//
// Go maps never shrink, and these hold pointers the GC must scan: a burst
// that queued a million small entries would leave maps of a million slots
// behind. So a shard whose map has fallen to 1/16 of its peak (and the
// peak was large) moves what is left to a fresh map.
type pendingShard struct {
	mu   sync.Mutex
	m    map[uint64]*item
	peak int // most keys m held since it was made
	filt [pendingSlots]atomic.Int32
	_    [40]byte // keep shards on separate cache lines
}

const pendingShrinkAt = 1024 // peak size at which a shard's map may be remade

const pendingSlots = 32

func pendingSlot(h uint64) uint64 { return h >> 59 } // the top 5 bits; shards use the low ones

// put makes it the pending operation of its key. REQUIRES: s.mu held.
func (s *pendingShard) put(it *item) {
	if _, ok := s.m[it.hash]; !ok {
		s.filt[pendingSlot(it.hash)].Add(1)
	}
	s.m[it.hash] = it
	s.peak = max(s.peak, len(s.m))
}

// del forgets h's pending operation. REQUIRES: s.mu held, h pending.
func (s *pendingShard) del(h uint64) {
	delete(s.m, h)
	s.filt[pendingSlot(h)].Add(-1)
	if s.peak >= pendingShrinkAt && len(s.m) <= s.peak/16 {
		m := make(map[uint64]*item, 2*len(s.m))
		for k, v := range s.m {
			m[k] = v
		}
		s.m, s.peak = m, len(m)
	}
}

// maybe says whether h may be pending (false: certainly not).
func (s *pendingShard) maybe(h uint64) bool { return s.filt[pendingSlot(h)].Load() != 0 }

func newPending() *pending {
	p := &pending{}
	for i := range p.shards {
		p.shards[i].m = make(map[uint64]*item)
	}
	return p
}

func (p *pending) shard(h uint64) *pendingShard {
	return &p.shards[(h>>32^h)%pendingShards]
}

// pendingResult says what the pending set knows about a key.
type pendingResult uint8

const (
	pendingNone   pendingResult = iota // not pending: ask the index
	pendingHit                         // value appended
	pendingHidden                      // removed, expired or another key: a miss
)

// get appends the pending value of key to dst.
func (p *pending) get(h uint64, key, dst []byte, now func() time.Time) ([]byte, int64, pendingResult) {
	s := p.shard(h)
	if !s.maybe(h) {
		return dst, 0, pendingNone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.m[h]
	switch {
	case it == nil:
		return dst, 0, pendingNone
	case it.tomb || !bytes.Equal(it.key(), key) || (it.expiry != 0 && it.expiry <= now().UnixNano()):
		return dst, 0, pendingHidden
	}
	return append(dst, it.value()...), it.expiry, pendingHit
}

// peek reports whether h has a pending operation, and whether it is a
// remove.
func (p *pending) peek(h uint64) (tomb, ok bool) {
	s := p.shard(h)
	if !s.maybe(h) {
		return false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.m[h]
	if it == nil {
		return false, false
	}
	return it.tomb, true
}

func (p *pending) len() int {
	n := 0
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// queue is a flusher's intake: a mutex-guarded slice swapped out whole
// by the flusher, plus a one-slot wake-up channel. Its bound is in bytes,
// enforced by the Engine before push.
//
// Only a push that finds the queue empty wakes the flusher: a non-empty
// queue has been signalled already and the flusher takes it whole. A
// deferred push (pushLater: the memory tier's eviction hook, under a
// memory shard lock) leaves that wake-up to Engine.Kick, which the Cache calls
// once the lock is released: waking a parked goroutine may cost a futex
// call, and every microsecond under the shard lock is one that every
// Insert and Get of the shard may wait.
type queue struct {
	mu     sync.Mutex
	items  []*item
	signal chan struct{}
	wake   atomic.Bool // a pushLater found the queue empty: kick must signal
}

func (q *queue) push(it *item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	first := len(q.items) == 1
	q.mu.Unlock()
	if first || q.wake.Load() {
		q.wake.Store(false)
		q.notify()
	}
}

// pushLater is push without the wake-up: it notes one for kick.
func (q *queue) pushLater(it *item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	first := len(q.items) == 1
	q.mu.Unlock()
	if first {
		q.wake.Store(true)
	}
}

// kick sends the wake-up a pushLater left, if any.
func (q *queue) kick() {
	if q.wake.Load() && q.wake.CompareAndSwap(true, false) {
		q.notify()
	}
}

func (q *queue) notify() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// empty reports whether nothing is queued.
func (q *queue) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) == 0
}

// take returns the queued items and gives the queue spare for reuse.
func (q *queue) take(spare []*item) []*item {
	q.mu.Lock()
	items := q.items
	q.items = spare[:0]
	q.mu.Unlock()
	return items
}

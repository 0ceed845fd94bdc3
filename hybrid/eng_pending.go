package hybrid

import (
	"bytes"
	"sync"
	"time"
)

// engItem is one queued write: an entry or a tombstone, with its own copy
// of key and value. It is referenced by its flusher's queue and buffer and,
// while it is the newest operation for its key, by the pending set.
type engItem struct {
	hash   uint64
	seq    uint64
	expiry int64 // unix nanoseconds, 0 = never
	tomb   bool
	klen   int
	kv     []byte // key then value
	size   int64  // bytes charged to the queue bound
}

func (it *engItem) key() []byte   { return it.kv[:it.klen] }
func (it *engItem) value() []byte { return it.kv[it.klen:] }

// engPending maps key hash → the newest queued operation for that key, so a
// Get right after an Insert hits and a Get right after a Remove misses. A
// shard's mutex is also the per-key serialisation point between Insert,
// Remove, the flusher's commit (index update) and reinsertion.
type engPending struct {
	shards [engPendingShards]engPendingShard
}

const engPendingShards = 256

type engPendingShard struct {
	mu sync.Mutex
	m  map[uint64]*engItem
	_  [40]byte // keep shards on separate cache lines
}

func newEngPending() *engPending {
	p := &engPending{}
	for i := range p.shards {
		p.shards[i].m = make(map[uint64]*engItem)
	}
	return p
}

func (p *engPending) shard(h uint64) *engPendingShard {
	return &p.shards[(h>>32^h)%engPendingShards]
}

// engPendingResult says what the pending set knows about a key.
type engPendingResult uint8

const (
	pendingNone   engPendingResult = iota // not pending: ask the index
	pendingHit                            // value appended
	pendingHidden                         // removed, expired or another key: a miss
)

// get appends the pending value of key to dst.
func (p *engPending) get(h uint64, key, dst []byte, now func() time.Time) ([]byte, int64, engPendingResult) {
	s := p.shard(h)
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
func (p *engPending) peek(h uint64) (tomb, ok bool) {
	s := p.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.m[h]
	if it == nil {
		return false, false
	}
	return it.tomb, true
}

func (p *engPending) len() int {
	n := 0
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// engQueue is a flusher's intake: a mutex-guarded slice swapped out whole
// by the flusher, plus a one-slot wake-up channel. Its bound is in bytes,
// enforced by the Engine before push.
type engQueue struct {
	mu     sync.Mutex
	items  []*engItem
	signal chan struct{}
}

func (q *engQueue) push(it *engItem) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// take returns the queued items and gives the queue spare for reuse.
func (q *engQueue) take(spare []*engItem) []*engItem {
	q.mu.Lock()
	items := q.items
	q.items = spare[:0]
	q.mu.Unlock()
	return items
}

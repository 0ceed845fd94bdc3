package hybrid

import "sync"

// index is a stand-in for the pointer-free sharded hash table that helper
// "index" is writing (hybrid/index.go). Same API; it is deleted when the
// real one is merged.
type index struct {
	shards []indexStubShard
}

type indexStubShard struct {
	mu sync.RWMutex
	m  map[uint64]uint64
}

const indexStubShards = 64

func newIndex(capacityHint int) *index {
	ix := &index{shards: make([]indexStubShard, indexStubShards)}
	for i := range ix.shards {
		ix.shards[i].m = make(map[uint64]uint64, capacityHint/indexStubShards)
	}
	return ix
}

func (ix *index) shard(h uint64) *indexStubShard { return &ix.shards[h%indexStubShards] }

func (ix *index) get(h uint64) (uint64, bool) {
	s := ix.shard(h)
	s.mu.RLock()
	v, ok := s.m[h]
	s.mu.RUnlock()
	return v, ok
}

func (ix *index) set(h, v uint64) (uint64, bool) {
	s := ix.shard(h)
	s.mu.Lock()
	old, ok := s.m[h]
	s.m[h] = v
	s.mu.Unlock()
	return old, ok
}

func (ix *index) remove(h uint64) (uint64, bool) {
	s := ix.shard(h)
	s.mu.Lock()
	old, ok := s.m[h]
	delete(s.m, h)
	s.mu.Unlock()
	return old, ok
}

func (ix *index) compareAndRemove(h, v uint64) bool {
	s := ix.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.m[h]; ok && cur == v {
		delete(s.m, h)
		return true
	}
	return false
}

func (ix *index) compareAndSwap(h, old, new uint64) bool {
	s := ix.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.m[h]; ok && cur == old {
		s.m[h] = new
		return true
	}
	return false
}

func (ix *index) len() int {
	n := 0
	for i := range ix.shards {
		s := &ix.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

func (ix *index) rangeShard(i int, fn func(h, v uint64) bool) {
	s := &ix.shards[i]
	s.mu.RLock()
	defer s.mu.RUnlock()
	for h, v := range s.m {
		if !fn(h, v) {
			return
		}
	}
}

func (ix *index) shardCount() int { return len(ix.shards) }

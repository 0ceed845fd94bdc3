package memory

import "runtime"

// The memory tier's lookups: lock-free under a sequence counter, or under
// the read lock when a writer keeps interfering (see Cache's doc).

type getStatus uint8

const (
	getMiss getStatus = iota
	getHit
	getExpired
)

// got is a lookup's answer: the status, on a hit the value appended to
// the caller's dst, its expiry and the entry's ref (for LRU's move).
type got struct {
	v   []byte
	exp int64
	st  getStatus
	r   entryRef
}

// get looks key up and, on a live hit, counts the hit (S3-FIFO) and
// appends the value to dst. It runs under s.mu or from optimisticGet (see
// find); it never writes the queues, so LRU's move is the caller's (touch).
func (s *shard) get(h uint64, key, dst []byte) got {
	f, ok := s.find(h, key)
	if !ok {
		return got{v: dst}
	}
	if f.expiry != 0 && f.expiry <= s.cfg.now() {
		return got{v: dst, st: getExpired}
	}
	if s.cfg.policy == s3fifo {
		s.hit(f.pos, f.r)
	}
	return got{v: s.appendValue(dst, &f, len(key)), exp: f.expiry, st: getHit, r: f.r}
}

// optimistic enables lock-free hits (optimisticGet). They rely on loads
// not being reordered with each other, which amd64 gives every load and Go
// gives only atomic loads elsewhere; other architectures take the read
// lock.
const optimistic = runtime.GOARCH == "amd64"

// optimisticGet is a lookup without the lock: read seq, look up and copy
// the value out, read seq again. If seq moved, a writer ran meanwhile and
// what was read may be torn, so it is thrown away. done reports whether the
// answer stands; if not (a writer kept interfering, the entry expired and
// must be dropped, or the arena is on the heap, where racy reads would be
// data races) the caller takes the lock. A hit thus writes nothing shared
// but the entry's hit count, and only until it reaches its cap: no lock
// word, no reader count.
func (s *shard) optimisticGet(h uint64, key, dst []byte) (g got, done bool) {
	if !optimistic || !s.arena.offHeap.Load() {
		return got{v: dst}, false
	}
	for range 2 {
		seq := s.seq.Load()
		if seq&1 != 0 {
			break
		}
		g = s.get(h, key, dst)
		if s.seq.Load() == seq && g.st != getExpired {
			return g, true
		}
	}
	return got{v: dst}, false
}

// lockedGet is get under the read lock, dropping an expired entry it finds.
func (s *shard) lockedGet(h uint64, key, dst []byte) got {
	s.mu.RLock()
	g := s.get(h, key, dst)
	s.mu.RUnlock()
	return s.dropFoundExpired(h, g)
}

// dropFoundExpired drops the expired entry under h that a lookup under the
// read lock reported (g), and returns g.
func (s *shard) dropFoundExpired(h uint64, g got) got {
	if g.st == getExpired {
		s.lockW()
		s.dropExpired(h)
		s.unlockW()
	}
	return g
}

// touch is LRU's hit: it moves the entry the hit found (r, under hash h) to
// the head of the queue if it is still there. The copy was made without
// the write lock; this takes it only for the relink, and without moving
// seq: readers never look at the queues.
func (s *shard) touch(h uint64, r entryRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, cur, ok := s.index(h); !ok || cur != r || s.closed {
		return
	}
	if i := r.slot(); s.q[qMain].head != i {
		s.unlink(i)
		s.pushHead(qMain, i)
	}
}

// dropExpired removes the entry under h if it is (still) expired.
// REQUIRES: s.mu held for writing.
func (s *shard) dropExpired(h uint64) {
	_, r, ok := s.index(h)
	if !ok || r.ghost() {
		return
	}
	if sl := s.slot(r.slot()); sl.expiry != 0 && sl.expiry <= s.cfg.now() {
		s.remove(r.slot())
		s.expirations.Add(1)
	}
}

// hit counts a hit on the entry whose index pair is at pos with ref r
// (S3-FIFO): lock-free, in the ref (see table).
func (s *shard) hit(pos uint64, r entryRef) {
	// r was loaded already: a hot entry at the cap costs no write.
	if f := r.freq(); f < maxFreq {
		s.tab.Load().casRef(pos, r, r.withFreq(f+1))
	}
}

package disk

import (
	"sync"
	"sync/atomic"
)

// readBytes bounds the bytes of read buffers that the engine's reads in
// flight hold at once (Options.ReadBufferBytes), so that the read pool
// can be deeper than the budget's ReadWorkers largest reads: with a ring,
// many small reads wait on the device at once, a few large ones or a mix.
//
// It is a weighted semaphore, first come first served: a read that does
// not fit waits behind those that came before it, so a large read is
// never starved by a stream of small ones. A read larger than the whole
// budget takes all of it (it runs alone). Waiters park on a channel of
// their own (one per read worker, with room for one wake-up), so neither
// side allocates.
//
// A holder is a read worker, from before it takes its read buffer until
// the read is done: delivered to its Get (which then owns the buffer, as
// with a pool of ReadWorkers), given back, or skipped. Safe for
// concurrent use.
type readBytes struct {
	mu    sync.Mutex
	size  int64
	avail int64
	queue []readWaiter // FIFO; reused
	held  atomic.Int64 // bytes held now (tests, gauges)
	peak  atomic.Int64 // most bytes ever held at once
	nwait atomic.Int32 // len(queue), for waiting without the lock
}

type readWaiter struct {
	n    int64
	wake chan struct{}
}

func newReadBytes(size int64) *readBytes {
	return &readBytes{size: size, avail: size}
}

// acquire waits until n bytes (at most the whole budget) are free, takes
// them and returns how many it took, for release. wake is the caller's
// own channel with room for one signal, empty on entry and on return.
func (s *readBytes) acquire(n int64, wake chan struct{}) int64 {
	n = min(n, s.size)
	s.mu.Lock()
	if len(s.queue) == 0 && s.avail >= n {
		s.take(n)
		s.mu.Unlock()
		return n
	}
	s.queue = append(s.queue, readWaiter{n: n, wake: wake})
	s.nwait.Store(int32(len(s.queue)))
	s.mu.Unlock()
	<-wake // release took the bytes for us
	return n
}

// take moves n available bytes to held. REQUIRES: s.mu held, n ≤ avail.
func (s *readBytes) take(n int64) {
	s.avail -= n
	h := s.held.Add(n)
	if h > s.peak.Load() {
		s.peak.Store(h) // under s.mu: no lost update
	}
}

// release gives back n bytes taken by acquire and wakes, in order, the
// waiters that now fit.
func (s *readBytes) release(n int64) {
	s.mu.Lock()
	s.avail += n
	s.held.Add(-n)
	i := 0
	for ; i < len(s.queue) && s.queue[i].n <= s.avail; i++ {
		s.take(s.queue[i].n)
		s.queue[i].wake <- struct{}{}
	}
	if i > 0 {
		rest := copy(s.queue, s.queue[i:])
		clear(s.queue[rest:])
		s.queue = s.queue[:rest]
		s.nwait.Store(int32(rest))
	}
	s.mu.Unlock()
}

// waiting reports whether a read waits for bytes (one atomic load).
func (s *readBytes) waiting() bool { return s.nwait.Load() > 0 }

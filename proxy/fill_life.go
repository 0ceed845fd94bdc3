package proxy

import (
	"context"
	"io"
	"sync"
	"time"
	"unsafe"
)

// opLife is the context of one fill or slice fetch: it ends at its
// deadline (FillTimeout after start) or when the Server closes, and on
// ending closes the origin body it watches, so that a pump blocked in a
// read returns.
//
// It replaces a context.WithTimeout child of the Server's context plus a
// context.AfterFunc per fill: those registered every fill under the
// Server context's one lock, and a miss paid about 8 allocations and 5%
// of its CPU for them. An opLife lives inside its fill (no allocation of
// its own), registers in a sharded set (lifeSet) that Close walks, and
// allocates only its timer, once: a recycled fill's life resets it.
//
// It is a context.Context for the code below a fill (the origin exchange,
// an S3 retry's sleep). Do not derive contexts from it: the context
// package would watch it with a goroutine of its own.
type opLife struct {
	deadline time.Time

	mu    sync.Mutex
	err   error         // nil while it lives
	done  chan struct{} // made by the first Done
	timer *time.Timer
	// What ending closes and wakes (watch): the body a pump reads, and
	// the condition its readers wait on.
	body io.Reader
	wake *sync.Cond

	set        *lifeSet
	prev, next *opLife // in set's shard, under its lock
	// gen counts l's starts (a recycled fill's life starts again), so
	// that cancelAll ends only the use of l it found in its set. Written
	// under mu by start before set.add; cancelAll reads it under the
	// shard's lock while l is in the set.
	gen uint64
}

// start begins l's life of d within set, whose owner's context is parent:
// when parent has already ended (the Server is closing), so does l. A
// life that has finished may start again (a recycled fill's): its timer
// is reset, not allocated again.
func (l *opLife) start(set *lifeSet, parent context.Context, d time.Duration) {
	l.mu.Lock()
	l.deadline = time.Now().Add(d)
	l.err, l.done = nil, nil
	l.gen++
	l.mu.Unlock()
	l.set = set
	set.add(l)
	if parent.Err() != nil {
		l.end(context.Canceled)
		return
	}
	l.mu.Lock()
	switch {
	case l.err != nil:
	case l.timer == nil:
		l.timer = time.AfterFunc(d, l.expire)
	default:
		l.timer.Reset(d)
	}
	l.mu.Unlock()
}

// expire is the timer's callback. It ends l only when l's deadline has
// passed: a timer armed for an earlier life of l may fire after that life
// finished and the next one started (time.Timer.Stop does not wait for a
// running callback).
func (l *opLife) expire() { l.endIf(context.DeadlineExceeded, true, 0) }

// finish ends l (Err is Canceled from now on, as after a context's
// cancel) and takes it out of its set. The owner calls it once, last.
func (l *opLife) finish() {
	l.end(context.Canceled)
	if l.set != nil {
		l.set.remove(l)
	}
}

// end ends l with err unless it has ended already; the watched body is
// closed and its waiters woken outside l's lock.
func (l *opLife) end(err error) { l.endIf(err, false, 0) }

// endIf is end, and when due, only once l's deadline has passed; when
// gen is not 0, only while l is the use of it that began as gen.
func (l *opLife) endIf(err error, due bool, gen uint64) {
	l.mu.Lock()
	if l.err != nil || (due && time.Now().Before(l.deadline)) || (gen != 0 && gen != l.gen) {
		l.mu.Unlock()
		return
	}
	l.err = err
	if l.done != nil {
		close(l.done)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	body, wake := l.body, l.wake
	l.body, l.wake = nil, nil
	l.mu.Unlock()
	if body != nil {
		closeBody(body, err)
		wake.L.Lock()
		wake.Broadcast()
		wake.L.Unlock()
	}
}

// watch has l's end close body and wake c's waiters, until unwatch; if l
// has ended already that happens now. As with context.AfterFunc, an end
// racing unwatch may still close body: the pump's caller closes it anyway.
func (l *opLife) watch(body io.Reader, c *sync.Cond) {
	l.mu.Lock()
	if l.err == nil {
		l.body, l.wake = body, c
		l.mu.Unlock()
		return
	}
	err := l.err
	l.mu.Unlock()
	closeBody(body, err)
}

func (l *opLife) unwatch() {
	l.mu.Lock()
	l.body, l.wake = nil, nil
	l.mu.Unlock()
}

// Deadline, Done, Err and Value make l a context.Context.

func (l *opLife) Deadline() (time.Time, bool) { return l.deadline, true }

func (l *opLife) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.err != nil {
			close(l.done)
		}
	}
	return l.done
}

func (l *opLife) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *opLife) Value(any) any { return nil }

// lifeShards: a fill takes one shard's lock at start and end; 16 keep
// two fills on different cores apart almost always.
const lifeShards = 16

// lifeSet is the Server's set of living fills and fetches, for Close.
type lifeSet struct {
	shards [lifeShards]struct {
		mu   sync.Mutex
		head *opLife
		_    [48]byte // a shard a cache line
	}
}

func (s *lifeSet) shard(l *opLife) int {
	return int(uintptr(unsafe.Pointer(l))>>7) % lifeShards
}

func (s *lifeSet) add(l *opLife) {
	sh := &s.shards[s.shard(l)]
	sh.mu.Lock()
	l.prev, l.next = nil, sh.head
	if sh.head != nil {
		sh.head.prev = l
	}
	sh.head = l
	sh.mu.Unlock()
}

func (s *lifeSet) remove(l *opLife) {
	sh := &s.shards[s.shard(l)]
	sh.mu.Lock()
	if l.prev != nil {
		l.prev.next = l.next
	} else if sh.head == l {
		sh.head = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	}
	l.prev, l.next = nil, nil
	sh.mu.Unlock()
}

// cancelAll ends every life in the set (Close, after the Server's
// context ended: a life that starts later sees that and ends at once).
// The ends run outside the shards' locks: a body close may wait for a
// read to return. Meanwhile a life may finish and start again for a
// recycled fill, maybe another Server's: only the use found is ended.
func (s *lifeSet) cancelAll() {
	type found struct {
		l   *opLife
		gen uint64
	}
	var all []found
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for l := sh.head; l != nil; l = l.next {
			all = append(all, found{l, l.gen})
		}
		sh.mu.Unlock()
	}
	for _, x := range all {
		x.l.endIf(context.Canceled, false, x.gen)
	}
}

package proxy

import (
	"hash/maphash"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Client deadlines.
//
// fasthttp arms its ReadTimeout, IdleTimeout and WriteTimeout itself, with
// a clock read and a SetReadDeadline or SetWriteDeadline (a runtime timer
// update) three times per keep-alive request: 6-7% of the CPU of a 1 KiB
// hit. HTTPServer gives fasthttp none of them; connDeadlines arms them
// instead, from fasthttp's ConnState hook and after the handler, and moves
// a deadline only when the one armed on the connection is earlier than
// wanted (or later than wanted by more than the margin below). It then
// arms it lazy(T) = min(T/8, 1s) later than wanted, so a
// busy connection re-arms about once per lazy(T), not once per request, and
// a timeout fires between T and T+lazy(T) after what it measures:
//
//   - a new connection: its first request within ReadTimeout;
//   - a connection gone idle after a response: its next request, idle
//     wait and reading both, within ClientIdleTimeout (fasthttp gives the
//     reading ReadTimeout more from the request's first byte);
//   - after the handler: the response written within WriteTimeout (none
//     when negative).
//
// Concurrency: each connection's state sits in one of connShards mutex
// shards (a map keyed by the connection, entries removed when fasthttp
// closes or hands over the connection). The timeouts are an immutable
// value behind an atomic pointer, replaced whole by a reload
// (setTimeouts); a connection's armed deadlines follow the new ones at
// their next move. Safe for concurrent use.
type connDeadlines struct {
	epoch  time.Time // monotonic origin of the armed times
	t      atomic.Pointer[clientTimeouts]
	seed   maphash.Seed
	shards [connShards]connShard
}

const connShards = 64

type connShard struct {
	mu sync.Mutex
	m  map[net.Conn]*connArmed
	_  [48]byte // one shard per cache line
}

// connArmed holds a connection's armed deadlines, as time since epoch.
type connArmed struct{ read, write time.Duration }

// clientTimeouts are ReadTimeout, ClientIdleTimeout and WriteTimeout (0:
// none) with their lazy margins.
type clientTimeouts struct {
	read, idle, write   time.Duration
	idleLazy, writeLazy time.Duration
}

// init sets the timeouts; write <= 0 is none.
func (d *connDeadlines) init(read, idle, write time.Duration) {
	d.epoch, d.seed = time.Now(), maphash.MakeSeed()
	d.setTimeouts(read, idle, write)
	for i := range d.shards {
		d.shards[i].m = make(map[net.Conn]*connArmed)
	}
}

// setTimeouts replaces the timeouts (a negative write is none).
func (d *connDeadlines) setTimeouts(read, idle, write time.Duration) {
	write = max(write, 0)
	d.t.Store(&clientTimeouts{read: read, idle: idle, write: write, idleLazy: lazy(idle), writeLazy: lazy(write)})
}

// lazy is how much later than wanted a deadline is armed.
func lazy(t time.Duration) time.Duration { return min(t/8, time.Second) }

// connState is fasthttp.Server.ConnState.
func (d *connDeadlines) connState(c net.Conn, state fasthttp.ConnState) {
	switch state {
	case fasthttp.StateNew:
		a := &connArmed{read: time.Since(d.epoch) + d.t.Load().read}
		sh := d.shard(c)
		sh.mu.Lock()
		sh.m[c] = a
		sh.mu.Unlock()
		_ = c.SetReadDeadline(d.epoch.Add(a.read))
	case fasthttp.StateIdle:
		d.arm(c, d.t.Load(), false)
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		sh := d.shard(c)
		sh.mu.Lock()
		delete(sh.m, c)
		sh.mu.Unlock()
	}
}

// armWrite makes sure c's write deadline is at least WriteTimeout away.
func (d *connDeadlines) armWrite(c net.Conn) {
	if to := d.t.Load(); to.write > 0 {
		d.arm(c, to, true)
	}
}

// writeWithin writes b to c in at most within (less when c's armed
// write deadline is sooner), then puts c's write deadline back as armed.
// It is for a small write made while others wait on the writer (a 103
// written during a fill's origin exchange, early_hints.go): a client that
// does not read must not hold them for its whole WriteTimeout.
func (d *connDeadlines) writeWithin(c net.Conn, b []byte, within time.Duration) (int, error) {
	sh := d.shard(c)
	sh.mu.Lock()
	var armed time.Duration // 0: none armed
	if a := sh.m[c]; a != nil {
		armed = a.write
	}
	sh.mu.Unlock()
	at := time.Since(d.epoch) + within
	if armed > 0 && armed < at {
		at = armed
	}
	if err := c.SetWriteDeadline(d.epoch.Add(at)); err != nil {
		return 0, err
	}
	n, err := c.Write(b)
	if err != nil {
		return n, err
	}
	var back time.Time
	if armed > 0 {
		back = d.epoch.Add(armed)
	}
	return n, c.SetWriteDeadline(back)
}

// arm moves c's read (or write) deadline when the armed one is less than
// the timeout away, or more than the timeout and its lazy margin (a new
// connection's ReadTimeout longer than ClientIdleTimeout).
func (d *connDeadlines) arm(c net.Conn, to *clientTimeouts, write bool) {
	t, slack := to.idle, to.idleLazy
	if write {
		t, slack = to.write, to.writeLazy
	}
	now := time.Since(d.epoch)
	sh := d.shard(c)
	sh.mu.Lock()
	a := sh.m[c]
	if a == nil {
		sh.mu.Unlock()
		return
	}
	armed := &a.read
	if write {
		armed = &a.write
	}
	if *armed >= now+t && *armed <= now+t+slack {
		sh.mu.Unlock()
		return
	}
	*armed = now + t + slack
	at := d.epoch.Add(*armed)
	sh.mu.Unlock()
	// An error means the connection is closed: its next I/O fails anyway.
	if write {
		_ = c.SetWriteDeadline(at)
	} else {
		_ = c.SetReadDeadline(at)
	}
}

func (d *connDeadlines) shard(c net.Conn) *connShard {
	return &d.shards[maphash.Comparable(d.seed, c)%connShards]
}

// open returns how many connections d tracks (tests).
func (d *connDeadlines) open() int {
	n := 0
	for i := range d.shards {
		sh := &d.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

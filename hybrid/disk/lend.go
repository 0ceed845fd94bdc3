package disk

import "github.com/cespare/xxhash/v2"

// Value holds one hit of Engine.Lend. A hit read from the device is the
// engine's aligned read buffer itself, sliced to the value: the bytes are
// not copied on their way out, and the buffer goes back to the engine's
// pool on Release. A hit on an entry still queued for its write (the
// pending set) is copied into a buffer the Value owns and reuses.
//
// Lifetime. Bytes stays valid and unchanged until Release (or the next
// Lend into v): the read buffer is the Value's alone until then, so an
// overwrite, removal or reclaim of the entry's region, or the engine's
// Close, never touches it. Every hit needs one Release, which is
// idempotent and may come after Close (the buffer is heap memory; the
// pool of a closed engine just lets it go). A Value must not be copied
// while it holds a buffer: the copy's Release would be a second return,
// which the pool refuses (see bufPool). Not safe for concurrent use.
type Value struct {
	b    []byte
	buf  *aligned // lent read buffer, nil when b is a copy
	gen  uint64   // buf's generation when lent
	pool *bufPool // buf's pool
	cp   []byte   // copy buffer for pending hits
}

// Bytes returns the value (see Value for how long it is valid).
func (v *Value) Bytes() []byte { return v.b }

// Leased reports whether Bytes is an engine read buffer (not a copy).
func (v *Value) Leased() bool { return v.buf != nil }

// Release gives a lent read buffer back to the engine's pool and empties
// v; a copy buffer is kept for reuse.
func (v *Value) Release() {
	if a := v.buf; a != nil {
		v.buf = nil
		v.pool.putGen(a, v.gen)
		v.pool = nil
	}
	v.b = nil
}

// Trim drops v's copy buffer if it grew past max bytes, for pools that
// must not hoard large buffers. REQUIRES: v released.
func (v *Value) Trim(max int) {
	if cap(v.cp) > max {
		v.cp = nil
	}
}

// Lend is GetWithExpiry without the copy: on a hit it sets v to key's
// value and returns the entry's expiry (unix ns, 0: none); the caller
// must Release v. A miss leaves v empty. A hit read from the device
// allocates nothing once the read buffers are pooled; a pending hit
// allocates nothing when v's copy buffer has room. Read buffers are
// rounded up to a size class (bufPool: a 64 KiB value takes an 80 KiB
// buffer), and each stays out of the pool while its Value is held.
func (e *Engine) Lend(key []byte, v *Value) (int64, bool) {
	v.Release()
	h := xxhash.Sum64(key)
	if !e.gate.enter(h) {
		return 0, false
	}
	defer e.gate.exit(h)
	out, expiry, at, res := e.find(h, key, v.cp[:0])
	switch res {
	case foundPending:
		v.cp, v.b = out, out
		return expiry, true
	case foundNone:
		return 0, false
	}
	l, ok := e.rt.read(h, at)
	if !ok {
		return 0, false
	}
	if !e.hit(&l, key) {
		e.bufs.put(l.buf)
		return 0, false
	}
	v.buf, v.gen, v.pool = l.buf, l.buf.gen.Load(), &e.bufs
	v.b = l.val[:len(l.val):len(l.val)]
	return l.expiry, true
}

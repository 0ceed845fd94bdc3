package memory

import "slices"

// Evicted is an entry the memory tier is evicting, as handed to
// Options.OnEvict. Key is borrowed; the value is not copied out until
// the hook asks for it (CopyValue), so a hook that refuses the entry — the
// disk tier's admission, which on a busy cache refuses most of them — costs
// no copy of the value at all, and one that accepts it copies it once,
// straight from the memory tier's blocks into its own buffer.
//
// An Evicted is valid only during the OnEvict call that received it: its
// Key and the blocks CopyValue reads are reused as soon as the call returns.
type Evicted struct {
	Key      []byte // borrowed: copy what you keep
	ValueLen int    // bytes CopyValue copies
	Expiry   int64  // unix nanoseconds, 0 for none

	s     *shard
	value []byte // the whole value when the entry is one run of blocks
	c     cursor // else: positioned at the value's first byte
}

// evicted describes sl for OnEvict: the key straight from the arena when
// its bytes are one span (always, for a contiguous entry or a key that fits
// the first block), else gathered into the shard's key scratch; the value
// left in place. REQUIRES: s.mu held for writing until OnEvict returns.
func (s *shard) evicted(sl *slot) Evicted {
	k, n := int(sl.klen), int(sl.klen)+int(sl.vlen)
	ev := Evicted{ValueLen: int(sl.vlen), Expiry: sl.expiry, s: s}
	if n == 0 {
		ev.Key, ev.value = []byte{}, []byte{}
		return ev
	}
	if s.arena.header(sl.first).contig != 0 {
		p := s.arena.run(sl.first, headerSize+n)[headerSize:]
		ev.Key, ev.value = p[:k:k], p[k:n:n]
		return ev
	}
	ev.c = s.arena.cursor(sl.first, headerSize+n)
	ev.c.skip(headerSize)
	p := ev.c.take(k)
	if len(p) < k {
		s.scratch = slices.Grow(append(s.scratch[:0], p...), k-len(p))
		p = ev.c.appendTo(s.scratch, k-len(p))
		s.scratch = p
	}
	ev.Key = p[:k:k]
	return ev
}

// CopyValue copies the value into dst and returns the bytes copied:
// min(len(dst), ValueLen). It may be called more than once, each time from
// the value's first byte. Only during the OnEvict call.
func (ev Evicted) CopyValue(dst []byte) int {
	if ev.s == nil {
		return 0
	}
	ev.s.valueCopies.Add(1)
	if ev.value != nil {
		return copy(dst, ev.value)
	}
	n := min(len(dst), ev.ValueLen)
	done := 0
	for done < n {
		q := ev.c.take(n - done) // ev is a copy: the cursor restarts each call
		if len(q) == 0 {
			break
		}
		done += copy(dst[done:n], q)
	}
	return done
}

// AppendValue appends the value to dst (a convenience over CopyValue for
// hooks that keep the value in a growing buffer). Only during the OnEvict
// call.
func (ev Evicted) AppendValue(dst []byte) []byte {
	dst = slices.Grow(dst, ev.ValueLen)
	n := ev.CopyValue(dst[len(dst) : len(dst)+ev.ValueLen])
	return dst[:len(dst)+n]
}

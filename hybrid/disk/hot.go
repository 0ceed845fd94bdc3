package disk

// The hot set: the keys the memory tier held at stop, hottest first,
// carried by the checkpoint (as xxhash64 key hashes) so that the next
// start can read them back into memory.

// SetHotSet gives the engine the key hashes (hottest first) that the
// checkpoint Close writes should carry, for HotSet at the next Open. It
// keeps hashes; the caller must not change it afterwards.
func (e *Engine) SetHotSet(hashes []uint64) {
	e.hotMu.Lock()
	e.hotOut = hashes
	e.hotMu.Unlock()
}

// HotSet returns the key hashes, hottest first, that the checkpoint
// loaded at Open carried (nil after a scan), and forgets them: the first
// caller owns the slice.
func (e *Engine) HotSet() []uint64 {
	e.hotMu.Lock()
	defer e.hotMu.Unlock()
	h := e.hotIn
	e.hotIn = nil
	return h
}

// ReadHot appends key and value of the entry indexed under hash h to
// dst, for warming the memory tier from a hot set: the key comes from the
// entry itself, checked like any read (magic, checksum, hash, expiry). It
// reads in the caller's goroutine, bypassing the read pool and its
// deadline, so it is for a background loop, never a request.
func (e *Engine) ReadHot(h uint64, dst []byte) (kv []byte, klen int, expiry int64, ok bool) {
	if !e.gate.enter(h) {
		return dst, 0, 0, false
	}
	defer e.gate.exit(h)
	if e.health.down() {
		return dst, 0, 0, false
	}
	v, ok := e.ix.get(h)
	if !ok {
		return dst, 0, 0, false
	}
	l, ok := e.load(h, v)
	if !ok {
		return dst, 0, 0, false
	}
	defer e.bufs.put(l.buf)
	dst = append(append(dst, l.key...), l.val...)
	return dst, len(l.key), l.expiry, true
}

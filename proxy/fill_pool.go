package proxy

import (
	"sync"
	"time"
	"unsafe"
)

// Fill recycling. A fill and the buffers it owns (its key, the primary
// key, the stored headers and their bytes, the window's slot table, the
// reader list, the first reader, its life's timer) go back to fillPool
// when the last reference is dropped (release), so that a miss does not
// allocate them again.
//
// Lifetime rule: once its reference count reaches 0 nothing may touch a
// fill or any byte it owns. That holds because every holder of a *fill
// holds a reference (join, joinExisting, newReader; the fill goroutine
// its own), the fill map drops it (remove) before the fill goroutine
// drops its reference, and every borrower of the fill's bytes (the
// stored headers handed to fasthttp, the record and slices handed to the
// store, the object and key a compression job takes) copies them before
// its holder releases. The exceptions are
// holders that outlive the references, and a fill that had one is never
// recycled (noPool): a reader that went on from the committed record
// (its slice source borrows the fill's object), and a fill that armed
// its lag timer (whose callback may still run); nor is a fill whose
// goroutine panicked, whatever state it left. The life's own timer is
// reused; an expiry that fires late for an earlier use of the life is
// ignored (opLife.expire checks the deadline).
//
// Under the race detector, recycled bytes are overwritten (poisonRecycled)
// so that a reader that breaks the rule reads garbage, not a plausible
// header, besides racing with the recycle.
var fillPool sync.Pool

// Caps on what a recycled fill keeps: an odd fill with many or long
// headers does not make every pooled fill hoard its buffers.
const (
	maxPooledHeaderBytes = 16 << 10
	maxPooledHeaders     = 64
	maxPooledKey         = 1 << 10
	maxPooledReaders     = 16
	maxPooledDigests     = 8 << 10 // 1024 slices' digests
)

// acquireFill returns a fill for key with references for its leader and
// its fill goroutine.
func acquireFill(s *Server, key []byte) *fill {
	f, _ := fillPool.Get().(*fill)
	if f == nil {
		f = &fill{}
		f.cond.L = &f.mu
	}
	f.s = s
	f.key = append(f.key[:0], key...)
	f.skey = f.key
	f.refs = 2
	f.declared = -1
	return f
}

// mapKey is f.key as a string for the fill map, without a copy: the map
// holds it only while the fill is in the map, and f.key does not change
// before the fill is recycled, which happens after it left the map.
func (f *fill) mapKey() string {
	return unsafe.String(unsafe.SliceData(f.key), len(f.key))
}

// addReader registers a reader at pos: the fill's own first reader when
// it is free, else a new one. REQUIRES: f.mu held.
func (f *fill) addReader(pos int64) *fillReader {
	r := &f.r0
	if f.r0.f != nil { // given out already: nothing clears its f but recycle
		r = new(fillReader)
	}
	*r = fillReader{f: f, scIdx: -1, pos: pos}
	f.readers = append(f.readers, r)
	return r
}

// recycle resets f, whose last reference is gone, and puts it in
// fillPool, keeping the buffers it owns (emptied). It leaves mu, cond
// and life's lock alone: a late timer callback may still take them.
// REQUIRES: f.mu held, f.refs == 0, the window's buffers returned.
func (f *fill) recycle() bool {
	if f.noPool {
		return false
	}
	if poisonRecycled {
		poison(f.key)
		poison(f.hdrBuf)
		poison(f.rv.pkey)
	}
	key, pkey, hdrBuf, hdrKVs := f.key[:0], f.rv.pkey[:0], f.hdrBuf[:0], f.hdrKVs[:0]
	window, slotIdx, readers, digests := f.window[:0], f.slotIdx[:0], f.readers[:0], f.digests[:0]
	clear(hdrKVs[:cap(hdrKVs)])
	clear(readers[:cap(readers)])
	f.s, f.key, f.skey, f.rv, f.compress = nil, nil, nil, fillReval{}, false
	f.state, f.err, f.refs = fillPending, nil, 0
	f.obj, f.hdrBuf, f.hdrKVs, f.block, f.handOff = object{}, nil, nil, nil, nil
	f.declared, f.received, f.done, f.storing, f.inserted = 0, 0, false, false, 0
	f.window, f.slotIdx, f.readers = nil, nil, nil
	f.waiting, f.large, f.expiry = false, false, time.Time{}
	f.digests, f.digesting, f.unpaced = nil, false, false
	f.r0 = fillReader{}
	if cap(key) <= maxPooledKey {
		f.key = key
	}
	if cap(pkey) <= maxPooledKey {
		f.rv.pkey = pkey
	}
	if cap(hdrBuf) <= maxPooledHeaderBytes && cap(hdrKVs) <= maxPooledHeaders {
		f.hdrBuf, f.hdrKVs = hdrBuf, hdrKVs
	}
	if cap(readers) <= maxPooledReaders {
		f.readers = readers
	}
	if cap(digests) <= maxPooledDigests {
		f.digests = digests
	}
	f.window, f.slotIdx = window, slotIdx
	return true
}

func poison(b []byte) {
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xdd
	}
}

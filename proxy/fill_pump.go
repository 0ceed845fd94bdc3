package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// The fill's body pump: copying the origin body into the window of slice
// buffers, waiting for readers before a slot is reused, and storing
// completed slices and the record (see fill for the design).

var errNoReaders = errors.New("proxy: fill not stored and no reader left")

// pump copies the origin body into the window, offering completed slices
// to the store, and commits the record at the end.
func (f *fill) pump(ctx context.Context, body io.Reader) error {
	sz, hdr := int64(f.s.opts.SliceSize), sliceHeaderLen
	for {
		idx := int(f.received / sz)
		if f.received%sz == 0 && f.received > 0 {
			f.insertSlice(idx - 1)
		}
		f.mu.Lock()
		slot := idx % len(f.window)
		if f.slotIdx[slot] != idx {
			if err := f.takeSlot(ctx, slot, idx); err != nil {
				f.mu.Unlock()
				return err
			}
		}
		buf := growSlab(&f.window[slot], hdr+int(sz))
		f.mu.Unlock()
		n, err := body.Read(buf[len(buf):min(cap(buf), hdr+int(sz))])
		f.mu.Lock()
		f.window[slot] = f.window[slot][:len(buf)+n]
		f.received += int64(n)
		if f.received > f.s.opts.MaxObjectSize || (f.declared >= 0 && f.received > f.declared) {
			f.storing = false
		}
		f.cond.Broadcast()
		f.mu.Unlock()
		if err == io.EOF {
			return f.finish()
		}
		if err != nil {
			return bodyError(err)
		}
	}
}

// takeSlot makes slot hold slice idx. REQUIRES: f.mu held.
func (f *fill) takeSlot(ctx context.Context, slot, idx int) error {
	evict := int64(f.slotIdx[slot]+1) * int64(f.s.opts.SliceSize)
	// Handlers that joined but have not registered as readers yet count
	// as readers at position 0.
	var deadline time.Time
	for f.slotIdx[slot] >= 0 && (f.pending() > 0 || f.minReaderPos() < evict) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if f.storing {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(f.s.cfg().FillLagWait)
				f.wakeAt(f.s.cfg().FillLagWait)
			}
			if !now.Before(deadline) {
				f.detachBehind(evict)
				break
			}
		}
		f.waiting = true
		f.cond.Wait()
	}
	if !f.storing && len(f.readers) == 0 && f.pending() == 0 {
		return errNoReaders
	}
	f.slotIdx[slot] = idx
	f.disown(slot)
	f.window[slot] = appendSliceRoom(f.window[slot][:0])
	return nil
}

// wakeAt makes the fill goroutine's cond.Wait return after d.
// REQUIRES: f.mu held.
func (f *fill) wakeAt(d time.Duration) {
	if f.lagTimer == nil {
		f.noPool = true // the callback may run after the last release
		f.lagTimer = time.AfterFunc(d, func() {
			f.mu.Lock()
			f.cond.Broadcast()
			f.mu.Unlock()
		})
		return
	}
	f.lagTimer.Reset(d)
}

// detachBehind lets every reader before pos go on alone: the fill no
// longer waits for it. REQUIRES: f.mu held.
func (f *fill) detachBehind(pos int64) {
	for _, r := range f.readers {
		if r.pos < pos {
			r.detached = true
			f.s.m.fillDetached.Inc()
		}
	}
}

// pending counts handlers holding the fill that are not readers (yet).
// REQUIRES: f.mu held, called by the fill goroutine (which holds a ref).
func (f *fill) pending() int { return f.refs - 1 - len(f.readers) }

// minReaderPos is the smallest position of a reader. REQUIRES: f.mu held.
func (f *fill) minReaderPos() int64 {
	p := int64(1<<63 - 1)
	for _, r := range f.readers {
		if !r.detached {
			p = min(p, r.pos)
		}
	}
	return p
}

// insertSlice offers slice idx (complete, still in its slot) to the store.
// Only the fill goroutine writes slots, so the slot is read without f.mu.
func (f *fill) insertSlice(idx int) {
	f.mu.Lock()
	ok := f.storing && idx == f.inserted
	slot := f.window[idx%len(f.window)]
	f.mu.Unlock()
	if !ok {
		return
	}
	data := slot[sliceHeaderLen:]
	appendSliceHeader(slot[:0], f.obj.Gen, idx, data)
	if f.digesting {
		f.digests = binary.BigEndian.AppendUint64(f.digests, sliceDigest(data))
	}
	paced(f.s.store, len(slot), &f.unpaced)
	f.s.store.Insert(sliceKey(f.kb[:0], f.skey, idx), slot, f.expiry)
	f.mu.Lock()
	f.inserted = idx + 1
	f.mu.Unlock()
}

// commitRecord stores the fill's record. A record under the URL's own key
// goes in under that key's variant lock, so that a variant index being
// published for an older record (publishEdgeIndex checks the generation
// under that lock) cannot replace it; a variant's record is then listed in
// its URL's index.
func (f *fill) commitRecord() {
	if f.rv.vary != nil {
		insertRecord(f.s.store, metaKey(f.kb[:0], f.skey), &f.obj, f.block, f.expiry, len(f.hdrBuf))
		f.s.recordTags(f.skey, &f.obj)
		f.s.variantCommitted(f)
		return
	}
	m := f.s.vlocks.lock(f.skey)
	defer m.Unlock() // deferred: a panicking store must not leave the stripe locked
	insertRecord(f.s.store, metaKey(f.kb[:0], f.skey), &f.obj, f.block, f.expiry, len(f.hdrBuf))
	f.s.recordTags(f.skey, &f.obj)
}

// finish checks the length and commits: last slice first, record last.
func (f *fill) finish() error {
	f.mu.Lock()
	n, declared, storing := f.received, f.declared, f.storing
	f.mu.Unlock()
	if declared >= 0 && n != declared {
		return fmt.Errorf("%w: %d of %d bytes", ErrTruncated, n, declared)
	}
	sz := int64(f.s.opts.SliceSize)
	if storing {
		f.obj.BodyLen = n
		if n <= sz {
			if n > 0 {
				f.obj.Body = f.window[0][sliceHeaderLen:]
			}
		} else {
			f.insertSlice(int((n - 1) / sz))
			if f.digesting && len(f.digests) == 8*f.obj.slices() {
				f.obj.Digests = f.digests
			}
		}
		f.commitRecord()
	}
	// Leave the fill map before readers get the last byte: a request that
	// comes after a client has the whole response must find the stored
	// one (or miss), not join a finished fill whose response may be stale
	// for it by then.
	f.s.fills.remove(f)
	f.mu.Lock()
	f.done = true
	f.cond.Broadcast()
	f.mu.Unlock()
	if storing && f.compress && f.rv.vary == nil {
		f.s.compressLater(f) // after the readers have the last byte
	}
	return nil
}

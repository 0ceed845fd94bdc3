package disk

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// openIdle opens an engine with one flusher whose batches wait an hour
// (until full or Close) and waits until its first entry, key "warm", has
// been put in a filling buffer by the flusher: from then on the flusher is
// idle with room, as after a write that outran its inserts.
func openIdle(t *testing.T) (*Engine, *flusher) {
	t.Helper()
	o := testOpts()
	o.Flushers, o.FlushDelay = 1, time.Hour
	e := openT(t, newMem(t, 16<<20), o)
	e.Insert([]byte("warm"), []byte("up"), time.Time{})
	f := e.flush[0]
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		placed := f.cur != nil && len(f.cur.items) == 1
		f.mu.Unlock()
		if placed {
			return e, f
		}
		if time.Now().After(deadline) {
			t.Fatal("the flusher never took its first entry")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestDirectInsertCopiesOnce: with the flusher idle and room in its
// buffer, an Insert serialises the entry straight into the buffer (one
// copy of the value, none queued), a Get before the write is served from
// the buffer, and the flusher's late checksum makes entries that read
// back after a restart, strict recovery included.
func TestDirectInsertCopiesOnce(t *testing.T) {
	e, _ := openIdle(t)
	const n = 20
	var bytesIn uint64
	for i := range n {
		k := []byte(fmt.Sprintf("k%d", i))
		v := val(k, 100+37*i, 0)
		bytesIn += uint64(len(v))
		if i%2 == 0 {
			e.Insert(k, v, time.Time{})
		} else {
			e.InsertFromLater(k, len(v), time.Time{}, func(dst []byte) int { return copy(dst, v) })
			e.Kick()
		}
	}
	st := e.Stats()
	if st.CopiedDirect != bytesIn || st.CopiedToQueue != 2 || st.CopiedFromQueue != 2 {
		t.Fatalf("copied direct %d (want %d), to queue %d, from queue %d (want the warm-up's 2 each)",
			st.CopiedDirect, bytesIn, st.CopiedToQueue, st.CopiedFromQueue)
	}
	check := func(e *Engine, pending bool) {
		t.Helper()
		for i := range n {
			k := []byte(fmt.Sprintf("k%d", i))
			if got, ok := e.Get(k, nil); !ok || !bytes.Equal(got, val(k, 100+37*i, 0)) {
				t.Fatalf("key %s: hit %v, wrong value", k, ok)
			}
		}
		if st := e.Stats(); pending && st.PendingHits != n {
			t.Fatalf("pending hits %d, want %d", st.PendingHits, n)
		}
	}
	check(e, true)
	closeT(t, e)
	for _, mode := range []RecoveryMode{RecoveryQuiet, RecoveryStrict} {
		o := testOpts()
		o.Recovery = mode
		dev := e.dev
		e = openT(t, dev, o)
		check(e, false)
		if st := e.Stats(); st.Corruptions != 0 {
			t.Fatalf("%s: %d corrupt entries", mode, st.Corruptions)
		}
		closeT(t, e)
	}
}

// TestDirectKeepsKeyOrder: an Insert that finds the flusher idle but an
// older operation of its key still queued must not pass it: in the
// filling buffer a key's entries are in sequence order. The test holds
// the flusher's lock so that the first Insert is queued, then races the
// second Insert against the flusher for it.
func TestDirectKeepsKeyOrder(t *testing.T) {
	e, f := openIdle(t)
	k := []byte("key")
	h := xxhash.Sum64(k)
	for round := range 50 {
		f.mu.Lock()
		e.Insert(k, val(k, 64, round*2), time.Time{}) // TryLock fails: queued
		f.mu.Unlock()
		e.Insert(k, val(k, 64, round*2+1), time.Time{})
		for !f.q.empty() {
			time.Sleep(10 * time.Microsecond)
		}
		f.mu.Lock()
		var last uint64
		for _, r := range f.cur.recs {
			if r.hash == h {
				if r.seq < last {
					f.mu.Unlock()
					t.Fatalf("round %d: key's entry of sequence %d written after one of %d", round, r.seq, last)
				}
				last = r.seq
			}
		}
		f.mu.Unlock()
	}
	if got, ok := e.Get(k, nil); !ok || !bytes.Equal(got, val(k, 64, 99)) {
		t.Fatalf("hit %v, not the newest value", ok)
	}
	closeT(t, e)
}

package proxy

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"
)

// TestOpLifeRestart: a finished life starts again with its timer reset,
// and an expiry left over from its earlier use (a callback that ran late)
// does not end the new one; one past the new deadline does.
func TestOpLifeRestart(t *testing.T) {
	var set lifeSet
	var l opLife
	l.start(&set, context.Background(), time.Hour)
	timer := l.timer
	l.finish()
	l.start(&set, context.Background(), time.Hour)
	if l.timer != timer {
		t.Fatal("the restarted life allocated a new timer")
	}
	if l.Err() != nil {
		t.Fatalf("restarted life: Err %v, want nil", l.Err())
	}
	l.expire() // the first life's callback, running late
	if l.Err() != nil {
		t.Fatalf("a stale expiry ended the restarted life: %v", l.Err())
	}
	l.mu.Lock()
	l.deadline = time.Now().Add(-time.Second)
	l.mu.Unlock()
	l.expire()
	if l.Err() != context.DeadlineExceeded {
		t.Fatalf("expiry past the deadline: Err %v, want DeadlineExceeded", l.Err())
	}
	l.finish()
}

// TestFillRecycleResets: a recycled fill is a fresh one but for the locks
// and the life (which late timer callbacks may still take), its scratch
// key array, and the emptied buffers it keeps. A field added to fill and
// not reset by recycle fails here.
func TestFillRecycleResets(t *testing.T) {
	f := acquireFill(new(Server), []byte("key"))
	f.rv.pkey = append(f.rv.pkey, "pkey"...)
	f.hdrKVs = append(f.hdrKVs, headerKV{Key: []byte("A"), Value: []byte("b")})
	f.hdrBuf = append(f.hdrBuf, "Ab"...)
	f.window, f.slotIdx = make([][]byte, 4), []int{0, -1, -1, -1}
	f.digests = append(f.digests, 1, 2)
	f.obj.Status, f.state, f.done, f.storing, f.received, f.declared = 200, fillShared, true, true, 3, 3
	f.compress, f.large, f.waiting, f.digesting, f.unpaced = true, true, true, true, true
	f.err, f.expiry, f.inserted = errNoReaders, time.Now(), 1
	f.mu.Lock()
	f.addReader(0)
	f.addReader(5)
	f.refs = 0
	f.mu.Unlock()
	f.readers = f.readers[:0]
	f.mu.Lock()
	if !f.recycle() {
		t.Fatal("not recycled")
	}
	f.mu.Unlock()
	kept := map[string]bool{"mu": true, "cond": true, "life": true, "kb": true}
	emptied := map[string]bool{"key": true, "hdrBuf": true, "hdrKVs": true, "window": true, "slotIdx": true, "readers": true, "digests": true}
	v := reflect.ValueOf(f).Elem()
	for i := range v.NumField() {
		name, fv := v.Type().Field(i).Name, v.Field(i)
		switch {
		case kept[name]:
		case emptied[name]:
			if fv.Len() != 0 {
				t.Errorf("recycled fill: %s has length %d", name, fv.Len())
			}
		case name == "rv":
			if len(f.rv.pkey) != 0 || !reflect.DeepEqual(f.rv, fillReval{pkey: f.rv.pkey}) {
				t.Errorf("recycled fill: rv %+v", f.rv)
			}
		case !fv.IsZero():
			t.Errorf("recycled fill: %s not reset", name)
		}
	}
	for _, r := range f.readers[:cap(f.readers)] {
		if r != nil {
			t.Error("recycled fill keeps a reader")
		}
	}
	f.noPool = true
	f.mu.Lock()
	if f.recycle() {
		t.Error("a noPool fill was recycled")
	}
	f.mu.Unlock()
}

// TestFillRecycleCapsDigests: a recycled fill does not keep the digest
// buffer of a body of many slices (8 bytes a slice, unbounded), as it
// keeps no oversized key, header or reader buffer.
func TestFillRecycleCapsDigests(t *testing.T) {
	f := acquireFill(new(Server), []byte("key"))
	f.digests = make([]byte, 0, 1<<20) // a 64 GiB body's, in 512 KiB slices
	f.mu.Lock()
	f.refs = 0
	f.recycle()
	f.mu.Unlock()
	if cap(f.digests) >= 1<<20 {
		t.Fatalf("recycled fill keeps %d bytes of digests", cap(f.digests))
	}
}

// blockingBody is an origin body whose close (by a life's end) blocks
// until released.
type blockingBody struct{ entered, release chan struct{} }

func (b *blockingBody) Read([]byte) (int, error) { return 0, nil }

func (b *blockingBody) CloseWithError(error) error {
	close(b.entered)
	<-b.release
	return nil
}

// TestCancelAllSparesRestartedLife: a life that Close's walk found in its
// Server's set, but that finished and started again (a recycled fill's,
// here in another Server's set) before the walk reached it, is not ended
// by that walk.
func TestCancelAllSparesRestartedLife(t *testing.T) {
	var setA, setB lifeSet
	var lives [2]opLife
	first, second := &lives[0], &lives[1]
	if setA.shard(first) > setA.shard(second) {
		first, second = second, first
	}
	// cancelAll walks shards in order, each from its head: first (added
	// last) is ended before second.
	bg := context.Background()
	second.start(&setA, bg, time.Hour)
	first.start(&setA, bg, time.Hour)
	body := &blockingBody{entered: make(chan struct{}), release: make(chan struct{})}
	var mu sync.Mutex
	first.watch(body, sync.NewCond(&mu))
	done := make(chan struct{})
	go func() { defer close(done); setA.cancelAll() }()
	<-body.entered // the walk holds both lives and is ending the first
	second.finish()
	second.start(&setB, bg, time.Hour)
	close(body.release)
	<-done
	if err := second.Err(); err != nil {
		t.Fatalf("a life restarted in another set was ended by the old set's walk: %v", err)
	}
	second.finish()
	first.finish()
}

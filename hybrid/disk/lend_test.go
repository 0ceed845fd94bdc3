package disk

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// lendT lends key from e into v and fails t on a miss.
func lendT(t *testing.T, e *Engine, key string, v *Value) {
	t.Helper()
	if _, ok := e.Lend([]byte(key), v); !ok {
		t.Fatalf("Lend(%s): miss", key)
	}
}

// TestLendHeldThroughReclaim: a value lent from the device stays whole
// while its key is overwritten and removed and its region is reclaimed
// and written over, is counted out of the pool until Release, and goes
// back once however often it is released.
func TestLendHeldThroughReclaim(t *testing.T) {
	o := testOpts()
	e := openT(t, newMem(t, 1024+4<<20), o) // 4 regions
	defer closeT(t, e)
	want := mval([]byte("lent"), 1, 40<<10)
	e.Insert([]byte("lent"), want, time.Time{})
	settle(t, e)
	var v Value
	lendT(t, e, "lent", &v)
	if !v.Leased() || !bytes.Equal(v.Bytes(), want) {
		t.Fatalf("Lend: leased %v, whole %v", v.Leased(), bytes.Equal(v.Bytes(), want))
	}
	if s := e.Stats(); s.ReadBuffersOut != 1 {
		t.Fatalf("ReadBuffersOut %d while lent, want 1", s.ReadBuffersOut)
	}
	e.Insert([]byte("lent"), mval([]byte("lent"), 2, 40<<10), time.Time{})
	e.Remove([]byte("lent"))
	for i := range 300 { // 12 MiB through 4 MiB of regions
		for !e.Insert(fmt.Appendf(nil, "fill%d", i), mval([]byte("fill"), uint64(i), 40<<10), time.Time{}) {
			settle(t, e)
		}
		e.Get(fmt.Appendf(nil, "fill%d", i/2), nil) // reads reuse pooled buffers
	}
	settle(t, e)
	if s := e.Stats(); s.Reclaims < 4 {
		t.Fatalf("only %d reclaims: the region was not reused", s.Reclaims)
	}
	if !bytes.Equal(v.Bytes(), want) {
		t.Fatal("lent bytes changed while the entry's region was reclaimed and rewritten")
	}
	v.Release()
	v.Release()
	if s := e.Stats(); s.ReadBuffersOut != 0 || s.BadReleases != 0 {
		t.Fatalf("after Release: out %d, bad %d", s.ReadBuffersOut, s.BadReleases)
	}
}

// TestLendCopiedValue: releasing a copy of a Value after the original was
// released (the lease returned twice) is refused, and the pool does not
// hand the buffer, now lent to another Value, out a second time.
func TestLendCopiedValue(t *testing.T) {
	e := openT(t, newMem(t, 1024+4<<20), testOpts())
	defer closeT(t, e)
	for _, k := range []string{"a", "b", "c"} {
		e.Insert([]byte(k), mval([]byte(k), 1, 8<<10), time.Time{})
	}
	settle(t, e)
	var v, x, y Value
	lendT(t, e, "a", &v)
	w := v // a bug: two Values hold one lease
	v.Release()
	lendT(t, e, "b", &x) // likely gets a's buffer from the pool
	func() {
		defer func() {
			if r := recover(); r != nil && !invariants {
				panic(r)
			}
		}()
		w.Release()
		if invariants {
			t.Fatal("a second return did not panic under invariants")
		}
	}()
	lendT(t, e, "c", &y)
	if x.buf == y.buf || !bytes.Equal(x.Bytes(), mval([]byte("b"), 1, 8<<10)) {
		t.Fatal("a buffer lent to one Value was handed out again")
	}
	x.Release()
	y.Release()
	if s := e.Stats(); s.BadReleases != 1 || s.ReadBuffersOut != 0 {
		t.Fatalf("BadReleases %d, ReadBuffersOut %d; want 1, 0", s.BadReleases, s.ReadBuffersOut)
	}
	e.bufs.bad.Store(0) // for closeT's check
}

// TestLendReleaseAfterClose: a value may outlive the engine; its Release
// after Close gives the buffer back once.
func TestLendReleaseAfterClose(t *testing.T) {
	e := openT(t, newMem(t, 1024+4<<20), testOpts())
	want := mval([]byte("k"), 1, 40<<10)
	e.Insert([]byte("k"), want, time.Time{})
	settle(t, e)
	var v Value
	lendT(t, e, "k", &v)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v.Bytes(), want) {
		t.Fatal("lent bytes changed by Close")
	}
	v.Release()
	checkBuffers(t, e)
}

// TestLendPending: a hit on an entry still queued for its write is a
// copy the Value owns (no read buffer), and a miss leaves v empty.
func TestLendPending(t *testing.T) {
	o := testOpts()
	o.FlushDelay = time.Hour // keep it pending
	e := openT(t, newMem(t, 1024+4<<20), o)
	defer closeT(t, e)
	want := mval([]byte("p"), 1, 3000)
	e.Insert([]byte("p"), want, time.Time{})
	var v Value
	defer v.Release()
	lendT(t, e, "p", &v)
	if v.Leased() || !bytes.Equal(v.Bytes(), want) || e.Stats().PendingHits != 1 {
		t.Fatalf("pending Lend: leased %v, whole %v", v.Leased(), bytes.Equal(v.Bytes(), want))
	}
	if _, ok := e.Lend([]byte("absent"), &v); ok || v.Bytes() != nil {
		t.Fatal("a miss left a value")
	}
}

package disk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

func val(key []byte, n int, version int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(i*7 + version + len(key))
	}
	if n >= 8 {
		binary.LittleEndian.PutUint64(v, uint64(version))
	}
	return v
}

func TestRoundTripSizes(t *testing.T) {
	for _, mode := range []RuntimeMode{RuntimeDisabled, RuntimeUnified, RuntimeSeparated, RuntimeUring} {
		t.Run(string(mode), func(t *testing.T) {
			o := testOpts()
			o.Runtime = mode
			e := openT(t, newMem(t, 16<<20), o)
			defer closeT(t, e)
			sizes := []int{0, 1, 7, 8, 100, 511, 512, 513, 1000, 4095, 4096, 4097, 20000, e.lay.maxEntry - entryHeaderSize - 8}
			for i, n := range sizes {
				k := []byte(fmt.Sprintf("key-%d", i))
				if !e.Insert(k, val(k, n, i), time.Time{}) {
					t.Fatalf("insert %d dropped", n)
				}
				// Right after Insert, the pending set answers.
				if got, ok := e.Get(k, nil); !ok || !bytes.Equal(got, val(k, n, i)) {
					t.Fatalf("pending get %d: ok=%v", n, ok)
				}
			}
			settle(t, e)
			for i, n := range sizes {
				k := []byte(fmt.Sprintf("key-%d", i))
				got, ok := e.Get(k, []byte("prefix"))
				if !ok || !bytes.Equal(got, append([]byte("prefix"), val(k, n, i)...)) {
					t.Fatalf("disk get %d: ok=%v len=%d", n, ok, len(got))
				}
			}
			if _, ok := e.Get([]byte("absent"), nil); ok {
				t.Fatal("hit on absent key")
			}
			if s := e.Stats(); s.Hits != uint64(2*len(sizes)) || s.Entries != len(sizes) {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	e := openT(t, newMem(t, 16<<20), testOpts())
	defer closeT(t, e)
	big := make([]byte, e.opts.BufferSize)
	if e.Insert([]byte("k"), big, time.Time{}) {
		t.Fatal("accepted an entry larger than a buffer")
	}
	if e.Insert(make([]byte, 70000), nil, time.Time{}) {
		t.Fatal("accepted a 70000-byte key")
	}
	if s := e.Stats(); s.DropTooLarge != 2 {
		t.Fatalf("DropTooLarge = %d", s.DropTooLarge)
	}
}

func TestWrapAndReclaim(t *testing.T) {
	for _, picker := range []PickerMode{PickerFIFO, PickerEmptiest} {
		t.Run(string(picker), func(t *testing.T) {
			o := testOpts()
			o.Picker = picker
			e := openT(t, newMem(t, 8<<20), o) // 7 regions of 1 MiB
			defer closeT(t, e)
			const n, size = 3000, 3000 // ~9 MiB: wraps the device
			for i := range n {
				k := []byte(fmt.Sprintf("k%d", i))
				for !e.Insert(k, val(k, size, i), time.Time{}) {
					settle(t, e) // queue full: let the flushers catch up
				}
			}
			settle(t, e)
			s := e.Stats()
			if s.Reclaims == 0 || s.Evictions == 0 {
				t.Fatalf("no reclaim: %+v", s)
			}
			hits := 0
			for i := range n {
				k := []byte(fmt.Sprintf("k%d", i))
				if got, ok := e.Get(k, nil); ok {
					hits++
					if !bytes.Equal(got, val(k, size, i)) {
						t.Fatalf("wrong value for %s", k)
					}
				}
			}
			// The newest entries survive: at least the last few regions' worth.
			if hits < 600 || hits == n {
				t.Fatalf("hits %d of %d", hits, n)
			}
			if s.Corruptions != 0 {
				t.Fatalf("corruptions %d", s.Corruptions)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	o := testOpts()
	o.Now = func() time.Time { return now }
	dev := newMem(t, 16<<20)
	e := openT(t, dev, o)
	e.Insert([]byte("short"), []byte("v1"), now.Add(time.Second))
	e.Insert([]byte("long"), []byte("v2"), now.Add(time.Hour))
	e.Insert([]byte("never"), []byte("v3"), time.Time{})
	if e.Insert([]byte("past"), []byte("v4"), now.Add(-time.Second)) {
		t.Fatal("accepted an expired entry")
	}
	settle(t, e)
	if _, ok := e.Get([]byte("short"), nil); !ok {
		t.Fatal("short missing before expiry")
	}
	now = now.Add(2 * time.Second)
	if _, ok := e.Get([]byte("short"), nil); ok {
		t.Fatal("expired entry served")
	}
	closeT(t, e)
	e = openT(t, dev.CrashClone(), o) // recovery skips expired entries too
	defer closeT(t, e)
	for k, want := range map[string]bool{"short": false, "long": true, "never": true, "past": false} {
		if _, ok := e.Get([]byte(k), nil); ok != want {
			t.Fatalf("%s after reopen: %v", k, ok)
		}
	}
}

func TestRemove(t *testing.T) {
	dev := newMem(t, 16<<20)
	e := openT(t, dev, testOpts())
	e.Insert([]byte("a"), []byte("1"), time.Time{})
	e.Insert([]byte("b"), []byte("2"), time.Time{})
	settle(t, e)
	e.Remove([]byte("a")) // written key
	if _, ok := e.Get([]byte("a"), nil); ok {
		t.Fatal("removed key served")
	}
	e.Insert([]byte("c"), []byte("3"), time.Time{})
	e.Remove([]byte("c")) // still pending: the late write must not resurrect it
	if _, ok := e.Get([]byte("c"), nil); ok {
		t.Fatal("removed pending key served")
	}
	settle(t, e)
	if _, ok := e.Get([]byte("c"), nil); ok {
		t.Fatal("late write resurrected c")
	}
	closeT(t, e)
	for _, mode := range []RecoveryMode{RecoveryQuiet, RecoveryStrict} {
		o := testOpts()
		o.Recovery = mode
		e = openT(t, dev.CrashClone(), o)
		for k, want := range map[string]bool{"a": false, "b": true, "c": false} {
			if _, ok := e.Get([]byte(k), nil); ok != want {
				t.Fatalf("%s: %s after reopen: %v", mode, k, ok)
			}
		}
		closeT(t, e)
	}
}

func TestReopen(t *testing.T) {
	dev := newMem(t, 16<<20)
	e := openT(t, dev, testOpts())
	const n = 500
	for i := range n {
		k := []byte(fmt.Sprintf("k%d", i))
		e.Insert(k, val(k, 100+i, 0), time.Time{})
	}
	for i := range n / 2 { // overwrite half
		k := []byte(fmt.Sprintf("k%d", i))
		e.Insert(k, val(k, 50+i, 1), time.Time{})
	}
	closeT(t, e)
	check := func(e *Engine, wantHits int) {
		t.Helper()
		hits := 0
		for i := range n {
			k := []byte(fmt.Sprintf("k%d", i))
			want := val(k, 100+i, 0)
			if i < n/2 {
				want = val(k, 50+i, 1)
			}
			if got, ok := e.Get(k, nil); ok {
				hits++
				if !bytes.Equal(got, want) {
					t.Fatalf("key %s: wrong value", k)
				}
			}
		}
		if hits != wantHits {
			t.Fatalf("hits %d, want %d", hits, wantHits)
		}
	}
	for _, mode := range []RecoveryMode{RecoveryQuiet, RecoveryStrict} {
		o := testOpts()
		o.Recovery = mode
		e = openT(t, dev.CrashClone(), o)
		if s := e.Stats(); s.Recovered != n {
			t.Fatalf("%s: recovered %d", mode, s.Recovered)
		}
		check(e, n)
		closeT(t, e)
	}
	o := testOpts()
	o.Recovery = RecoveryNone
	e = openT(t, dev.CrashClone(), o)
	check(e, 0)
	closeT(t, e)
}

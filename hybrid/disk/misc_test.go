package disk

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestGetAllocs: a disk hit allocates nothing in any runtime mode.
func TestGetAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, mode := range []RuntimeMode{RuntimeDisabled, RuntimeUnified, RuntimeSeparated, RuntimeUring} {
		t.Run(string(mode), func(t *testing.T) {
			o := testOpts()
			o.Runtime = mode
			e := openT(t, newMem(t, 16<<20), o)
			defer closeT(t, e)
			k := []byte("key")
			e.Insert(k, bytes.Repeat([]byte("v"), 1000), time.Time{})
			settle(t, e)
			dst := make([]byte, 0, 2048)
			allocs := testing.AllocsPerRun(200, func() {
				if _, ok := e.Get(k, dst[:0]); !ok {
					t.Fatal("miss")
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocs per disk hit", allocs)
			}
		})
	}
}

// TestInsertAllocs: in the steady state an Insert allocates nothing
// (items and their buffers are pooled; queues and maps are already grown).
func TestInsertAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	o := testOpts()
	o.FlushDelay = time.Millisecond
	e := openT(t, newMem(t, 16<<20), o)
	defer closeT(t, e)
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%d", i))
	}
	v := bytes.Repeat([]byte("v"), 1000)
	for range 20 {
		for _, k := range keys {
			e.Insert(k, v, time.Time{})
		}
		settle(t, e)
	}
	i := 0
	allocs := testing.AllocsPerRun(500, func() {
		if !e.Insert(keys[i%len(keys)], v, time.Time{}) {
			settle(t, e)
		}
		if i++; i%len(keys) == 0 {
			settle(t, e)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Insert", allocs)
	}
}

// switchAdmitter admits until reject is set.
type switchAdmitter struct{ reject atomic.Bool }

func (a *switchAdmitter) Admit(uint64, int) bool { return !a.reject.Load() }
func (a *switchAdmitter) Written(int)            {}

// TestInsertFrom: fill runs only for an entry that passes every
// check, fills the value in place, and a fill that copies the wrong length
// drops the entry and hides the older value.
func TestInsertFrom(t *testing.T) {
	o := testOpts()
	adm := &switchAdmitter{}
	o.Admission = adm
	e := openT(t, newMem(t, 16<<20), o)
	defer closeT(t, e)
	calls := 0
	fillWith := func(v []byte) func([]byte) int {
		return func(dst []byte) int { calls++; return copy(dst, v) }
	}
	if !e.InsertFrom([]byte("k"), 3, time.Time{}, fillWith([]byte("old"))) || calls != 1 {
		t.Fatalf("admitted InsertFrom: calls %d", calls)
	}
	if v, ok := e.Get([]byte("k"), nil); !ok || string(v) != "old" {
		t.Fatalf("Get after InsertFrom: %q, %v", v, ok)
	}
	refused := []struct {
		name   string
		key    []byte
		vlen   int
		expiry time.Time
		refuse bool
	}{
		{"admission", []byte("x"), 3, time.Time{}, true},
		{"expired", []byte("x"), 3, time.Unix(1, 0), false},
		{"too large", []byte("x"), 1 << 30, time.Time{}, false},
		{"negative", []byte("x"), -1, time.Time{}, false},
		{"long key", make([]byte, 1<<16), 3, time.Time{}, false},
	}
	for _, tc := range refused {
		adm.reject.Store(tc.refuse)
		calls = 0
		if e.InsertFrom(tc.key, tc.vlen, tc.expiry, fillWith([]byte("new"))) || calls != 0 {
			t.Errorf("%s: InsertFrom accepted or called fill %d times", tc.name, calls)
		}
	}
	adm.reject.Store(false)
	for _, n := range []int{2, 4} {
		if e.InsertFrom([]byte("k"), 3, time.Time{}, func(dst []byte) int { return n }) {
			t.Fatalf("fill of %d bytes for 3 accepted", n)
		}
		if v, ok := e.Get([]byte("k"), nil); ok {
			t.Fatalf("short fill left %q readable", v)
		}
	}
	if st := e.Stats(); st.DropFill != 2 || st.DropAdmission != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRefusedInsertHides: an Insert refused by admission hides the
// older value (in memory and, through a tombstone, after a restart).
func TestRefusedInsertHides(t *testing.T) {
	dev := newMem(t, 16<<20)
	o := testOpts()
	adm := &switchAdmitter{}
	o.Admission = adm
	e := openT(t, dev, o)
	e.Insert([]byte("k"), []byte("old"), time.Time{})
	settle(t, e)
	adm.reject.Store(true)
	if e.Insert([]byte("k"), []byte("new"), time.Time{}) {
		t.Fatal("admitted")
	}
	if _, ok := e.Get([]byte("k"), nil); ok {
		t.Fatal("older value served after a refused Insert")
	}
	if s := e.Stats(); s.DropAdmission != 1 {
		t.Fatalf("DropAdmission %d", s.DropAdmission)
	}
	closeT(t, e)
	e = openT(t, dev.CrashClone(), testOpts())
	defer closeT(t, e)
	if _, ok := e.Get([]byte("k"), nil); ok {
		t.Fatal("older value back after restart")
	}
}

// TestDensity: 1 KiB entries cost at most 1.15× their payload on the
// device, even when written in small batches.
func TestDensity(t *testing.T) {
	o := testOpts()
	o.FlushDelay = time.Millisecond
	e := openT(t, newMem(t, 32<<20), o)
	const n = 5000
	for i := range n {
		k := []byte(fmt.Sprintf("object-%08d", i))
		for !e.Insert(k, make([]byte, 1024), time.Time{}) {
			settle(t, e)
		}
	}
	closeT(t, e)
	s := e.Stats()
	ratio := float64(s.BytesWritten) / float64(s.PayloadWritten)
	t.Logf("written %d bytes for %d payload bytes in %d batches: %.3f×", s.BytesWritten, s.PayloadWritten, s.Batches, ratio)
	if ratio > 1.15 {
		t.Fatalf("density %.3f× > 1.15×", ratio)
	}
}

func TestOptionsValidate(t *testing.T) {
	var o Options
	if err := o.EnsureDefaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := Options{RegionSize: 1000, BufferSize: 1, Flushers: -1, Runtime: "x", Recovery: "y", Picker: "z",
		ReadTimeout: -1, ErrorWindow: 48 * time.Hour, ProbeInterval: 2 * time.Hour, ErrorLimit: 1 << 21}
	bad.EnsureDefaults()
	err := bad.Validate()
	if !errors.Is(err, ErrOptions) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"region_size", "buffer_size", "flushers", "runtime", "recovery", "picker",
		"read_timeout", "error_window", "probe_interval", "error_limit"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%q not reported in %v", want, err)
		}
	}
	if _, err := Open(newMem(t, 2<<20), testOpts()); !errors.Is(err, ErrDevice) {
		t.Fatalf("tiny device: %v", err)
	}
}

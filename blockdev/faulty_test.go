package blockdev

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

func newFaultyT(t *testing.T) (*Faulty, *MemDevice) {
	t.Helper()
	m, err := NewMem(64<<10, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return NewFaulty(m, 1), m
}

// outcomes runs n single-block writes at offsets 0, 4096, ... and returns
// which of them failed ('x') or succeeded ('.').
func outcomes(f *Faulty, n int) string {
	buf := AlignedBuffer(4096, 4096)
	var s strings.Builder
	for i := range n {
		if _, err := f.WriteAt(buf, int64(i%16)*4096); err != nil {
			s.WriteByte('x')
		} else {
			s.WriteByte('.')
		}
	}
	return s.String()
}

func TestFaultyWriteSelection(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name  string
		fault Fault
		want  string
	}{
		{"none", Fault{Op: OpRead}, "......"},
		{"3rd write", Fault{Op: OpWrite, Nth: 3}, "..x..."},
		{"after 4", Fault{Op: OpWrite, After: 4}, "....xx"},
		{"after 1, twice", Fault{Op: OpWrite, After: 1, Limit: 2}, ".xx..."},
		{"offsets >= 8 KiB", Fault{Op: OpWrite, Match: func(off int64, _ int) bool { return off >= 8192 }}, "..xxxx"},
		{"2nd write in range", Fault{Op: OpWrite, Nth: 2, Match: func(off int64, _ int) bool { return off >= 8192 }}, "...x.."},
		{"custom error", Fault{Op: OpWrite | OpSync, Nth: 1, Err: errBoom}, "x....."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newFaultyT(t)
			f.Inject(tc.fault)
			if got := outcomes(f, 6); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if got := uint64(strings.Count(tc.want, "x")); f.Fired() != got || f.Stats().Errors != got {
				t.Fatalf("Fired %d Errors %d, want %d", f.Fired(), f.Stats().Errors, got)
			}
		})
	}
}

func TestFaultyErrors(t *testing.T) {
	f, m := newFaultyT(t)
	errBoom := errors.New("boom")
	id := f.Inject(Fault{Op: OpWrite | OpSync, Err: errBoom})
	buf := AlignedBuffer(4096, 4096)
	_, err := f.WriteAt(buf, 4096)
	if !errors.Is(err, errBoom) || !strings.HasPrefix(err.Error(), "blockdev: injected write fault at 4096") {
		t.Fatalf("write: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, errBoom) {
		t.Fatalf("sync: %v", err)
	}
	if _, err := f.WriteAt(buf[:100], 0); !errors.Is(err, ErrMisaligned) {
		t.Fatalf("misaligned write: %v (alignment comes before faults)", err)
	}
	f.Remove(id)
	f.Inject(Fault{Op: OpRead})
	if _, err := f.ReadAt(buf, 0); !errors.Is(err, ErrInjected) {
		t.Fatalf("read: %v", err)
	}
	f.Clear()
	if _, err := f.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if m.Stats().Writes != 0 || m.Stats().Reads != 1 {
		t.Fatalf("failed operations reached the device: %+v", m.Stats())
	}
	if f.Inner() != Device(m) || IsDirect(f) {
		t.Fatal("Inner/Direct")
	}
}

func TestFaultyTear(t *testing.T) {
	tests := []struct {
		name string
		keep int
		want int // blocks that reach the device
	}{
		{"keep 2 of 4", 2, 2},
		{"keep 0", 0, 0},
		{"keep more than there are", 9, 3}, // always torn: at least one block missing
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, m := newFaultyT(t)
			f.Inject(Fault{Op: OpWrite, Action: Tear, Keep: tc.keep})
			w := AlignedBuffer(4*4096, 4096)
			pattern(w, 1)
			n, err := f.WriteAt(w, 8192)
			if !errors.Is(err, ErrInjected) || n != tc.want*4096 {
				t.Fatalf("torn write returned %d, %v", n, err)
			}
			r := AlignedBuffer(4*4096, 4096)
			if _, err := m.ReadAt(r, 8192); err != nil {
				t.Fatal(err)
			}
			split := tc.want * 4096
			if !bytes.Equal(r[:split], w[:split]) || !bytes.Equal(r[split:], make([]byte, len(r)-split)) {
				t.Fatalf("device does not hold exactly the first %d blocks", tc.want)
			}
		})
	}
	t.Run("random keep is seeded", func(t *testing.T) {
		keeps := func() []int {
			f, _ := newFaultyT(t)
			f.Inject(Fault{Op: OpWrite, Action: Tear, Keep: -1})
			var ks []int
			for range 8 {
				n, _ := f.WriteAt(AlignedBuffer(8*4096, 4096), 0)
				ks = append(ks, n/4096)
			}
			return ks
		}
		a, b := keeps(), keeps()
		for i := range a {
			if a[i] != b[i] || a[i] >= 8 {
				t.Fatalf("keeps %v vs %v", a, b)
			}
		}
	})
}

func TestFaultyFlip(t *testing.T) {
	f, m := newFaultyT(t)
	w := AlignedBuffer(8192, 4096)
	pattern(w, 2)
	if _, err := m.WriteAt(w, 4096); err != nil {
		t.Fatal(err)
	}
	f.Inject(Fault{Op: OpRead, Action: Flip, Nth: 1, FlipAt: []int64{4096 + 10, 8192 + 5, 60000}})
	r := AlignedBuffer(8192, 4096)
	if _, err := f.ReadAt(r, 4096); err != nil {
		t.Fatal(err)
	}
	diff := diffs(w, r)
	if len(diff) != 2 || diff[0] != 10 || diff[1] != 4096+5 || r[10]^w[10] != 1 {
		t.Fatalf("flipped bytes at %v", diff)
	}
	if _, err := f.ReadAt(r, 4096); err != nil || !bytes.Equal(r, w) {
		t.Fatal("second read was corrupted too (Nth: 1)")
	}

	// With a probability and no offsets: one random bit in about half the
	// reads, the same reads and bits for the same seed.
	run := func() (string, []int) {
		f := NewFaulty(m, 7)
		f.Inject(Fault{Op: OpRead, Action: Flip, Prob: 0.5})
		var s strings.Builder
		var at []int
		for range 40 {
			if _, err := f.ReadAt(r, 4096); err != nil {
				t.Fatal(err)
			}
			d := diffs(w, r)
			s.WriteByte(byte('0' + len(d)))
			at = append(at, d...)
		}
		return s.String(), at
	}
	s1, at1 := run()
	s2, at2 := run()
	if s1 != s2 || len(at1) != len(at2) || strings.Count(s1, "1") < 10 || strings.Count(s1, "1") > 30 || strings.Trim(s1, "01") != "" {
		t.Fatalf("not a seeded single-bit flip about half the time: %s vs %s", s1, s2)
	}
}

func diffs(a, b []byte) []int {
	var d []int
	for i := range a {
		if a[i] != b[i] {
			d = append(d, i)
		}
	}
	return d
}

func TestFaultyInjectPanics(t *testing.T) {
	for name, fl := range map[string]Fault{
		"no op":          {},
		"tear a read":    {Op: OpRead, Action: Tear},
		"flip a write":   {Op: OpWrite, Action: Flip},
		"unknown op":     {Op: 1 << 6},
		"unknown action": {Op: OpRead, Action: 9},
	} {
		t.Run(name, func(t *testing.T) {
			f, _ := newFaultyT(t)
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f.Inject(fl)
		})
	}
}

// TestFaultyConcurrent changes faults while goroutines do I/O (-race).
func TestFaultyConcurrent(t *testing.T) {
	f, _ := newFaultyT(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			buf := AlignedBuffer(4096, 4096)
			for i := range 200 {
				off := int64((g*4+i%4)*4096) % (64 << 10)
				f.WriteAt(buf, off)
				f.ReadAt(buf, off)
			}
		})
	}
	for i := range 50 {
		id := f.Inject(Fault{Op: OpWrite | OpRead, Prob: 0.1})
		if i%2 == 0 {
			f.Remove(id)
		}
	}
	wg.Wait()
	f.Clear()
	if s := f.Stats(); s.Errors != f.Fired() {
		t.Fatalf("Errors %d, Fired %d", s.Errors, f.Fired())
	}
}

// TestFaultyHang: a Hang fault holds the operations it fires on, and no
// others, until it is removed; then they reach the inner device and
// succeed.
func TestFaultyHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, m := newFaultyT(t)
		w := AlignedBuffer(4096, 4096)
		pattern(w, 3)
		if _, err := m.WriteAt(w, 4096); err != nil {
			t.Fatal(err)
		}
		id := f.Inject(Fault{Op: OpRead | OpSync, Action: Hang})
		r := AlignedBuffer(4096, 4096)
		var readErr, syncErr error
		read, synced := make(chan struct{}), make(chan struct{})
		go func() { _, readErr = f.ReadAt(r, 4096); close(read) }()
		go func() { syncErr = f.Sync(); close(synced) }()
		synctest.Wait()
		if f.Hanging() != 2 || closed(read) || closed(synced) {
			t.Fatalf("Hanging %d, read returned %v, sync returned %v", f.Hanging(), closed(read), closed(synced))
		}
		if _, err := f.WriteAt(w, 0); err != nil {
			t.Fatalf("a write, which the fault does not cover, failed: %v", err)
		}
		f.Remove(id)
		<-read
		<-synced
		if readErr != nil || syncErr != nil || !bytes.Equal(r, w) || f.Hanging() != 0 {
			t.Fatalf("after release: read %v, sync %v, data ok %v, Hanging %d", readErr, syncErr, bytes.Equal(r, w), f.Hanging())
		}
		if f.Fired() != 2 || f.Stats().Errors != 0 {
			t.Fatalf("Fired %d, Errors %d; want 2, 0", f.Fired(), f.Stats().Errors)
		}
	})
}

// TestFaultyHangNthAndClear: Nth picks the operation that hangs; Clear
// releases it as Remove does.
func TestFaultyHangNthAndClear(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _ := newFaultyT(t)
		f.Inject(Fault{Op: OpWrite, Action: Hang, Nth: 2})
		if got := outcomes(f, 1); got != "." {
			t.Fatalf("first write: %s", got)
		}
		done := make(chan string)
		go func() { done <- outcomes(f, 1) }()
		synctest.Wait()
		if f.Hanging() != 1 {
			t.Fatalf("Hanging %d, want the second write held", f.Hanging())
		}
		if got := outcomes(f, 1); got != "." {
			t.Fatalf("third write: %s", got)
		}
		f.Clear()
		if got := <-done; got != "." || f.Hanging() != 0 {
			t.Fatalf("held write after Clear: %s, Hanging %d", got, f.Hanging())
		}
	})
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

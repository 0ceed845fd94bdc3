package blockdev

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openRingDisk opens a 4 MiB file as a Disk, fills it with a pattern and
// sends its reads through a ring of depth 4; it skips where io_uring is
// not available.
func openRingDisk(t *testing.T) (*Disk, []byte) {
	t.Helper()
	const size = 4 << 20
	dev, err := Open(filepath.Join(t.TempDir(), "dev"), Options{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	d := dev.(*Disk)
	t.Cleanup(func() { _ = d.Close() })
	data := AlignedBuffer(size, d.BlockSize())
	pattern(data, 3)
	if _, err := d.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.UseRing(4); err != nil {
		t.Skipf("io_uring not available here: %v", err)
	}
	return d, data
}

// completions is how many completions d's ring has reaped.
func completions(d *Disk) uint32 { return atomic.LoadUint32(d.h.ring.cqHead) }

// waitCompletions waits up to two seconds for d's ring to have reaped
// want completions since c0 and returns how many it has. The reaper
// hands each read its result before it advances the CQ head past the
// batch, so the last reads can return a moment before they are counted.
func waitCompletions(d *Disk, c0, want uint32) uint32 {
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := completions(d) - c0
		if got >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDiskUseRing: after UseRing, 16 goroutines' random aligned reads
// (more than the ring's depth, so some wait for a slot) all return the
// file's bytes, every one of them through the ring (its completion queue
// advances once per read), and Stats counts them. Close closes the ring.
func TestDiskUseRing(t *testing.T) {
	d, data := openRingDisk(t)
	if err := d.UseRing(8); err != nil || d.h.ring.depth != 4 {
		t.Fatalf("second UseRing: %v, depth %d; want no-op", err, d.h.ring.depth)
	}
	before, c0 := d.Stats(), completions(d)
	const goroutines, each = 16, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			p := AlignedBuffer(64<<10, d.BlockSize())
			for range each {
				n := (1 + rng.IntN(16)) * 4096
				off := rng.Int64N(int64(len(data)-n)/4096) * 4096
				if got, err := d.ReadAt(p[:n], off); err != nil || got != n || !bytes.Equal(p[:n], data[off:off+int64(n)]) {
					t.Errorf("read %d at %d: %d, %v", n, off, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := waitCompletions(d, c0, goroutines*each); got != goroutines*each {
		t.Errorf("%d reads through the ring, want %d", got, goroutines*each)
	}
	if s := d.Stats(); s.Reads-before.Reads != goroutines*each || s.Errors != 0 {
		t.Errorf("stats %+v after %+v", s, before)
	}
	ring := d.h.ring
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if !ring.closed.Load() {
		t.Error("Close left the ring open")
	}
	if _, err := d.ReadAt(make([]byte, 0), 0); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadAt after Close: %v", err)
	}
}

// TestDiskRingBrokenFallsBack: a submission that fails (here: the ring's
// descriptor swapped for /dev/null, so io_uring_enter fails) breaks the
// ring; that read and every later one go to pread and still return the
// file's bytes.
func TestDiskRingBrokenFallsBack(t *testing.T) {
	d, data := openRingDisk(t)
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(null)
	if err := unix.Dup3(null, d.h.ring.fd, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	p := AlignedBuffer(8192, d.BlockSize())
	for i, off := range []int64{4096, 65536} {
		clear(p)
		if n, err := d.ReadAt(p, off); err != nil || n != len(p) || !bytes.Equal(p, data[off:off+int64(len(p))]) {
			t.Fatalf("read %d at %d: %d, %v", i, off, n, err)
		}
		if !d.h.ring.broken.Load() {
			t.Fatal("the ring is not broken")
		}
	}
}

// TestRingCloseWaitsForRead: a read the kernel has not completed (from an
// empty pipe) keeps Close waiting, and lands in its buffer before
// ReadAt returns: a caller that gave up on it could not have reused the
// buffer before then. This is what lets a read worker of the disk engine
// keep its read buffer until the device answers.
func TestRingCloseWaitsForRead(t *testing.T) {
	r := newRingT(t, 2)
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	rd, wr := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer rd.Close()
	defer wr.Close()
	p := make([]byte, 5)
	read := make(chan error, 1)
	go func() {
		n, err := r.ReadAt(fds[0], p, 0)
		if err == nil && n != len(p) {
			err = errors.New("short read")
		}
		read <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); atomic.LoadUint32(r.sqHead) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the read never reached the kernel")
		}
		runtime.Gosched()
	}
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a read in flight", err)
	case err := <-read:
		t.Fatalf("read returned (%v) from an empty pipe", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := wr.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil || string(p) != "hello" {
		t.Fatalf("read: %v, %q", err, p)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestReadFullBoundsEAGAIN: a read that keeps answering EAGAIN ends with
// that error after maxAgain retries instead of spinning; a few EAGAINs
// between progress are retried.
func TestReadFullBoundsEAGAIN(t *testing.T) {
	calls := 0
	n, err := readFull(make([]byte, 8), 0, func([]byte, int64) (int, error) {
		calls++
		return 0, unix.EAGAIN
	})
	if n != 0 || !errors.Is(err, unix.EAGAIN) || calls != maxAgain+1 {
		t.Fatalf("always EAGAIN: n=%d err=%v calls=%d, want 0, EAGAIN, %d", n, err, calls, maxAgain+1)
	}
	calls = 0
	n, err = readFull(make([]byte, 8), 0, func(b []byte, _ int64) (int, error) {
		calls++
		if calls%maxAgain != 0 { // maxAgain-1 EAGAINs before each byte
			return 0, unix.EAGAIN
		}
		return 1, nil
	})
	if n != 8 || err != nil {
		t.Fatalf("EAGAIN between bytes: n=%d err=%v, want 8, nil", n, err)
	}
}

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

// newRingT opens a ring or skips where io_uring is not available.
func newRingT(t testing.TB, depth uint32) *Ring {
	t.Helper()
	r, err := NewRing(depth)
	if err != nil {
		t.Skipf("io_uring not available here: %v", err)
	}
	return r
}

// TestRingReadAt: 64 goroutines read random ranges of a file through a
// ring of depth 8 (so most wait for a slot); every read returns the file's
// bytes. A read past the end is short, a bad descriptor an error, and
// ReadAt after Close ErrRingClosed.
func TestRingReadAt(t *testing.T) {
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i*13 + i>>9)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	r := newRingT(t, 8)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 50 {
				n := 1 + rng.IntN(64<<10)
				off := rng.Int64N(int64(len(data) - n))
				p := make([]byte, n)
				got, err := r.ReadAt(fd, p, off)
				if err != nil || got != n || !bytes.Equal(p, data[off:off+int64(n)]) {
					t.Errorf("read %d at %d: %d, %v", n, off, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	p := make([]byte, 100)
	if n, err := r.ReadAt(fd, p, int64(len(data)-10)); n != 10 || err != nil {
		t.Errorf("read across the end: %d, %v; want 10, nil", n, err)
	}
	if _, err := r.ReadAt(-1, p, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("bad fd: %v, want EBADF", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAt(fd, p, 0); !errors.Is(err, ErrRingClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// BenchmarkDiskReads compares three ways to run 32 concurrent 256 KiB
// O_DIRECT reads of a 256 MiB file, as the disk tier's hits do: a
// blocking pread per goroutine, a pool of 8 pread workers (the engine's
// default), and the ring. Beside the read rate it reports how much CPU
// work a busy goroutine got done meanwhile (spin-Mops/s): a read that
// holds its P while the device works starves it.
func BenchmarkDiskReads(b *testing.B) {
	const fileSize, readSize, conc = 256 << 20, 256 << 10, 32
	path := filepath.Join(b.TempDir(), "bench.img")
	dev, err := Open(path, Options{Size: fileSize})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	d := dev.(*Disk)
	if !d.Direct() {
		b.Skip("no O_DIRECT on this file system")
	}
	buf := AlignedBuffer(4<<20, d.BlockSize())
	for off := int64(0); off < fileSize; off += int64(len(buf)) {
		if _, err := d.WriteAt(buf, off); err != nil {
			b.Fatal(err)
		}
	}
	fd := d.h.fd
	pread := func(p []byte, off int64) error { _, err := unix.Pread(fd, p, off); return err }
	ring, err := NewRing(conc)
	if err != nil {
		b.Skipf("io_uring not available: %v", err)
	}
	defer ring.Close()
	jobs := make(chan func(), conc)
	for range 8 {
		go func() {
			for j := range jobs {
				j()
			}
		}()
	}
	defer close(jobs)
	pooled := func(p []byte, off int64) error {
		var err error
		done := make(chan struct{})
		jobs <- func() { _, err = unix.Pread(fd, p, off); close(done) }
		<-done
		return err
	}
	uring := func(p []byte, off int64) error { _, err := ring.ReadAt(fd, p, off); return err }
	for _, m := range []struct {
		name string
		read func([]byte, int64) error
	}{{"pread", pread}, {"pool8", pooled}, {"uring", uring}} {
		for _, busy := range []bool{false, true} {
			name := m.name
			if busy {
				name += "+spinner"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(readSize)
				var spins atomic.Int64
				stop := make(chan struct{})
				var spinWG sync.WaitGroup
				if busy {
					spinWG.Go(func() { spin(&spins, stop) })
				}
				var next atomic.Int64
				start := time.Now()
				b.ResetTimer()
				var wg sync.WaitGroup
				for g := range conc {
					wg.Go(func() {
						p := AlignedBuffer(readSize, d.BlockSize())
						rng := rand.New(rand.NewPCG(uint64(g), 2))
						for next.Add(1) <= int64(b.N) {
							off := rng.Int64N(fileSize/readSize) * readSize
							if err := m.read(p, off); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				close(stop)
				spinWG.Wait()
				if busy {
					b.ReportMetric(float64(spins.Load())/time.Since(start).Seconds()/1e6, "spin-Mops/s")
				}
			})
		}
	}
}

// spin counts units of CPU work until stop, yielding between batches as a
// request handler would.
func spin(n *atomic.Int64, stop <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			return
		default:
		}
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		n.Add(1)
		runtime.Gosched()
	}
}

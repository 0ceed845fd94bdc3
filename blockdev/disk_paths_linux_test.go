package blockdev

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDiskIOErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev")
	d := openT(t, path, Options{Size: 64 << 10})
	buf := AlignedBuffer(8192, 4096)
	tests := []struct {
		name string
		p    []byte
		off  int64
		want error
	}{
		{"misaligned offset", buf, 512, ErrMisaligned},
		{"misaligned length", buf[:512], 0, ErrMisaligned},
		{"misaligned address", AlignedBuffer(8192, 4096)[512 : 512+4096], 0, ErrMisaligned},
		{"past the end", buf, 60 << 10, ErrOutOfRange},
		{"negative", buf, -4096, ErrOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := d.WriteAt(tc.p, tc.off); !errors.Is(err, tc.want) {
				t.Errorf("WriteAt: %v, want %v", err, tc.want)
			}
			if _, err := d.ReadAt(tc.p, tc.off); !errors.Is(err, tc.want) {
				t.Errorf("ReadAt: %v, want %v", err, tc.want)
			}
		})
	}
	if s := d.Stats(); s.Errors != 0 || s.Reads != 0 || s.Writes != 0 {
		t.Errorf("refused I/O was counted: %+v", s)
	}

	// A store that shrinks under us (here: truncated behind our back) makes
	// pread come up short: a wrapped error naming path and offset, counted.
	if err := os.Truncate(path, 16<<10); err != nil {
		t.Fatal(err)
	}
	_, err := d.ReadAt(buf, 32<<10)
	want := "blockdev: pread " + path + " at 32768: "
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("read past the real end: %v, want prefix %q", err, want)
	}
	if s := d.Stats(); s.Errors != 1 {
		t.Fatalf("Errors %d, want 1", s.Errors)
	}
}

func TestDiskClosed(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "dev"), Options{Size: 64 << 10})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	buf := AlignedBuffer(4096, 4096)
	for name, err := range map[string]error{
		"read":  second(d.ReadAt(buf, 0)),
		"write": second(d.WriteAt(buf, 0)),
		"sync":  d.Sync(),
		"close": d.Close(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

func second(_ int, err error) error { return err }

// tmpfsDir returns a fresh directory on tmpfs, or skips.
func tmpfsDir(t *testing.T) string {
	var sf unix.Statfs_t
	if unix.Statfs("/dev/shm", &sf) != nil || sf.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs at /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "blockdev-test-")
	if err != nil {
		t.Skipf("cannot write to /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestDiskBufferedFallback(t *testing.T) {
	t.Run("tmpfs", func(t *testing.T) {
		log, logged := testLogger()
		d := openT(t, filepath.Join(tmpfsDir(t), "dev"), Options{Size: 64 << 10, Logger: log})
		if d.Direct() || IsDirect(d) {
			t.Fatal("tmpfs reported as direct I/O")
		}
		if n := strings.Count(logged.String(), "buffered I/O"); n != 1 {
			t.Fatalf("want one warning, got %d: %s", n, logged)
		}
		roundTrip(t, d)
	})
	t.Run("EINVAL at open", func(t *testing.T) {
		openFn = func(path string, flags int, perm uint32) (int, error) {
			if flags&unix.O_DIRECT != 0 {
				return -1, unix.EINVAL
			}
			return unix.Open(path, flags, perm)
		}
		t.Cleanup(func() { openFn = unix.Open })
		log, logged := testLogger()
		d := openT(t, filepath.Join(t.TempDir(), "dev"), Options{Size: 64 << 10, Logger: log})
		if d.Direct() || !strings.Contains(logged.String(), "refuses O_DIRECT") {
			t.Fatalf("direct=%v log=%s", d.Direct(), logged)
		}
		roundTrip(t, d)
	})
	t.Run("no fallocate", func(t *testing.T) {
		fallocateFn = func(int, uint32, int64, int64) error { return unix.EOPNOTSUPP }
		t.Cleanup(func() { fallocateFn = unix.Fallocate })
		log, logged := testLogger()
		path := filepath.Join(t.TempDir(), "dev")
		d := openT(t, path, Options{Size: 64 << 10, Logger: log})
		if fi, err := os.Stat(path); err != nil || fi.Size() != 64<<10 || d.Size() != 64<<10 {
			t.Fatalf("ftruncate fallback: %v", err)
		}
		if !strings.Contains(logged.String(), "ftruncate") {
			t.Fatalf("no warning: %s", logged)
		}
	})
}

func roundTrip(t *testing.T, d Device) {
	t.Helper()
	w, r := AlignedBuffer(8192, 4096), AlignedBuffer(8192, 4096)
	pattern(w, 5)
	if _, err := d.WriteAt(w, 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadAt(r, 4096); err != nil || !bytes.Equal(r, w) {
		t.Fatalf("round trip: %v", err)
	}
}

// TestDiskConcurrent runs writers on disjoint ranges and readers beside
// them, then Close racing with the I/O; run it under -race.
func TestDiskConcurrent(t *testing.T) {
	const workers, blocks = 4, 16
	d := openT(t, filepath.Join(t.TempDir(), "dev"), Options{Size: workers * blocks * 4096})
	pool := NewPool(4096, 1<<20)
	defer pool.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Add(2)
		go func() { // writer, then verifier, of its own range
			defer wg.Done()
			b := pool.Acquire(4096)
			defer pool.Release(b)
			for i := range blocks {
				off := int64((w*blocks + i) * 4096)
				pattern(b.B, byte(off>>12))
				if _, err := d.WriteAt(b.B, off); err != nil {
					errs <- err
					return
				}
				if _, err := d.ReadAt(b.B, off); err != nil || b.B[1] != byte(7)^byte(off>>12) {
					errs <- errors.Join(err, errors.New("read back wrong bytes"))
					return
				}
			}
		}()
		go func() { // reader anywhere
			defer wg.Done()
			b := pool.Acquire(8192)
			defer pool.Release(b)
			for i := range blocks {
				if _, err := d.ReadAt(b.B, int64(((w+i)%(workers*blocks-1))*4096)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := d.Stats(); s.Writes != workers*blocks || s.Errors != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestDiskCloseDuringIO closes the device under running readers: each read
// either succeeds or reports ErrClosed, never touches a reused descriptor.
func TestDiskCloseDuringIO(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "dev"), Options{Size: 64 << 10})
	var wg sync.WaitGroup
	started := make(chan struct{}, 4)
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			buf := AlignedBuffer(4096, 4096)
			for i := range 100000 {
				_, err := d.ReadAt(buf, 0)
				if i == 0 {
					started <- struct{}{}
				}
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						errs <- err
					}
					return
				}
			}
		})
	}
	for range 4 {
		<-started
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDiskWriteError gives a Disk a read-only descriptor, so pwrite fails
// with EBADF: the error names path and offset and is counted.
func TestDiskWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev")
	if err := os.WriteFile(path, make([]byte, 16<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &Disk{path: path, h: handle{fd: fd}, size: 16 << 10, bs: 4096}
	defer d.Close()
	_, err = d.WriteAt(AlignedBuffer(4096, 4096), 8192)
	if !errors.Is(err, unix.EBADF) || !strings.HasPrefix(err.Error(), "blockdev: pwrite "+path+" at 8192: ") {
		t.Fatalf("WriteAt: %v", err)
	}
	if s := d.Stats(); s.Errors != 1 || s.Writes != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestBlockSizeFor(t *testing.T) {
	tests := []struct {
		align, want int // want 0: error
	}{
		{0, 4096}, {512, 4096}, {4096, 4096}, {8192, 8192}, {6000, 0}, {2 << 20, 0},
	}
	for _, tc := range tests {
		got, err := blockSizeFor("x", tc.align)
		if got != tc.want || (err != nil) != (tc.want == 0) {
			t.Errorf("blockSizeFor(%d) = %d, %v; want %d", tc.align, got, err, tc.want)
		}
		if err != nil && !errors.Is(err, ErrUnsupported) {
			t.Errorf("error %v is not ErrUnsupported", err)
		}
	}
}

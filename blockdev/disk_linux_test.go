package blockdev

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testLogger returns a logger writing into a buffer the test can inspect.
func testLogger() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func openT(t *testing.T, path string, o Options) *Disk {
	t.Helper()
	if o.Logger == nil {
		o.Logger, _ = testLogger()
	}
	d, err := Open(path, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { d.Close() })
	return d.(*Disk)
}

func TestDiskRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		direct bool
		size   int64
		io     int
		off    int64
	}{
		{"direct 4k at 0", true, 1 << 20, 4096, 0},
		{"direct 64k in the middle", true, 1 << 20, 64 << 10, 512 << 10},
		{"direct last block", true, 1 << 20, 4096, 1<<20 - 4096},
		{"direct whole device", true, 256 << 10, 256 << 10, 0},
		{"buffered 8k", false, 1 << 20, 8192, 8192},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dev")
			d := openT(t, path, Options{Size: tc.size, Direct: new(tc.direct)})
			if d.Direct() != tc.direct || IsDirect(d) != tc.direct {
				t.Fatalf("Direct() = %v, want %v", d.Direct(), tc.direct)
			}
			if d.Size() != tc.size || d.BlockSize() != 4096 {
				t.Fatalf("size %d block %d", d.Size(), d.BlockSize())
			}
			w, r := AlignedBuffer(tc.io, 4096), AlignedBuffer(tc.io, 4096)
			pattern(w, 3)
			if n, err := d.WriteAt(w, tc.off); err != nil || n != tc.io {
				t.Fatalf("WriteAt: %d, %v", n, err)
			}
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
			if n, err := d.ReadAt(r, tc.off); err != nil || n != tc.io {
				t.Fatalf("ReadAt: %d, %v", n, err)
			}
			if !bytes.Equal(w, r) {
				t.Fatal("read back different bytes")
			}
			s := d.Stats()
			if s.Reads != 1 || s.Writes != 1 || s.ReadBytes != uint64(tc.io) || s.WriteBytes != uint64(tc.io) || s.Syncs != 1 || s.Errors != 0 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestDiskReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev")
	d, err := Open(path, Options{Size: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	w := AlignedBuffer(4096, 4096)
	pattern(w, 9)
	if _, err := d.WriteAt(w, 8192); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2 := openT(t, path, Options{}) // Size 0: the file's size
	if d2.Size() != 64<<10 {
		t.Fatalf("reopened size %d", d2.Size())
	}
	r := AlignedBuffer(4096, 4096)
	if _, err := d2.ReadAt(r, 8192); err != nil || !bytes.Equal(r, w) {
		t.Fatalf("data lost across reopen: %v", err)
	}
}

func TestDiskPreallocates(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		existing int64 // -1: no file
		sparse   bool
		size     int64
		want     int64
	}{
		{"create", -1, false, 8 << 20, 8 << 20},
		{"grow a sparse file", 1 << 20, true, 4 << 20, 4 << 20},
		{"fill holes of a same-size sparse file", 2 << 20, true, 2 << 20, 2 << 20},
		{"size 0 keeps the file's size", 3 << 20, true, 0, 3 << 20},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, string(rune('a'+i)))
			if tc.existing >= 0 {
				if err := os.WriteFile(path, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(path, tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			d := openT(t, path, Options{Size: tc.size})
			if d.Size() != tc.want {
				t.Fatalf("Size %d, want %d", d.Size(), tc.want)
			}
			var st unix.Stat_t
			if err := unix.Stat(path, &st); err != nil {
				t.Fatal(err)
			}
			if st.Size != tc.want || st.Blocks*512 < tc.want {
				t.Fatalf("file size %d with %d allocated bytes, want %d allocated", st.Size, st.Blocks*512, tc.want)
			}
		})
	}
}

func TestDiskOpenRefusals(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny := filepath.Join(dir, "tiny")
	if err := os.WriteFile(tiny, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		opts Options
		is   error
		want string
	}{
		{"missing without size", filepath.Join(dir, "nope"), Options{}, nil, "a size is needed"},
		{"shrink", big, Options{Size: 32 << 10}, nil, "refusing to shrink"},
		{"empty-ish file without size", tiny, Options{}, nil, "less than one block"},
		{"directory", dir, Options{}, ErrUnsupported, "neither a block device nor a regular file"},
		{"char device", "/dev/null", Options{}, ErrUnsupported, "neither"},
		{"bad options", big, Options{Size: 100}, nil, "not a multiple of 4096"},
		{"missing parent", filepath.Join(dir, "no", "dev"), Options{Size: 4096}, unix.ENOENT, "blockdev: open"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(tc.path, tc.opts)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "blockdev: ") {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused Open left a file behind")
	}
	if fi, _ := os.Stat(big); fi.Size() != 64<<10 {
		t.Error("a refused Open changed the file's size")
	}
}

func TestDiskFileLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev")
	d := openT(t, path, Options{Size: 64 << 10})
	_, err := Open(path, Options{Size: 64 << 10})
	if !errors.Is(err, ErrBusy) || !errors.Is(err, unix.EWOULDBLOCK) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open: %v, want ErrBusy naming the path", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	openT(t, path, Options{}) // the lock went with the descriptor
}

package blockdev

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// loopDevice attaches a fresh file of size bytes to a loop device and
// detaches it when the test ends, or skips when that cannot be done.
func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop device test needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skip("loop device test needs /dev/loop-control")
	}
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		t.Skip("loop device test needs losetup (util-linux)")
	}
	img := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(losetup, "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("losetup --find --show failed (no free loop device in this container?): %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

func TestBlockDevice(t *testing.T) {
	const size = 8 << 20
	dev := loopDevice(t, size)
	d := openT(t, dev, Options{})
	if !d.IsBlockDevice() || !d.Direct() {
		t.Fatalf("block=%v direct=%v", d.IsBlockDevice(), d.Direct())
	}
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	logical, err := unix.IoctlGetInt(fd, unix.BLKSSZGET)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	if d.Size() != size || d.BlockSize() != max(4096, logical) || d.DirectIOAlignment() != logical {
		t.Fatalf("size %d block %d align %d, want %d, max(4096, %d)", d.Size(), d.BlockSize(), d.DirectIOAlignment(), size, logical)
	}
	w, r := AlignedBuffer(64<<10, 4096), AlignedBuffer(64<<10, 4096)
	pattern(w, 11)
	for _, off := range []int64{0, 1 << 20, size - 64<<10} {
		if _, err := d.WriteAt(w, off); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ReadAt(r, off); err != nil || !bytes.Equal(w, r) {
			t.Fatalf("round trip at %d: %v", off, err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadAt(r, size); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read at the end: %v", err)
	}

	_, err = Open(dev, Options{})
	if !errors.Is(err, ErrBusy) || !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), dev) {
		t.Fatalf("second open: %v, want ErrBusy naming %s", err, dev)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		opts Options
		size int64
		err  string
	}{
		{"first part only", Options{Size: 1 << 20}, 1 << 20, ""},
		{"larger than the device", Options{Size: 2 * size}, 0, "less than Options.Size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(dev, tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Open: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.Size() != tc.size {
				t.Fatalf("size %d, want %d", d.Size(), tc.size)
			}
		})
	}
}

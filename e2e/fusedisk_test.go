package e2e

// A cache device that fails on command: a one-file FUSE file system served
// by the test process (github.com/hanwen/go-fuse/v2), whose file's reads,
// writes and fsyncs can be made to hang until released or to fail with
// EIO. This kernel has no device-mapper, so dm-flakey and dm-error are
// out of reach; a FUSE file stands in for them. Files are opened with
// FOPEN_DIRECT_IO, so every read and write reaches the server whether or
// not strata gets O_DIRECT.

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Modes of a fuseDisk.
const (
	diskOK int32 = iota
	diskHang
	diskFail
)

// fuseDisk is the file's node: its bytes in memory and the switch.
type fuseDisk struct {
	fs.Inode
	mu   sync.RWMutex
	data []byte

	mode atomic.Int32
	gate sync.Mutex
	open chan struct{} // closed unless hanging; a hung operation waits for it
}

var (
	_ fs.NodeOpener    = (*fuseDisk)(nil)
	_ fs.NodeReader    = (*fuseDisk)(nil)
	_ fs.NodeWriter    = (*fuseDisk)(nil)
	_ fs.NodeFsyncer   = (*fuseDisk)(nil)
	_ fs.NodeGetattrer = (*fuseDisk)(nil)
	_ fs.NodeSetattrer = (*fuseDisk)(nil)
	_ fs.NodeFlusher   = (*fuseDisk)(nil)
)

// fuseRoot is the file system's root directory, holding "dev".
type fuseRoot struct {
	fs.Inode
	disk *fuseDisk
}

func (r *fuseRoot) OnAdd(ctx context.Context) {
	ch := r.NewPersistentInode(ctx, r.disk, fs.StableAttr{Mode: syscall.S_IFREG})
	r.AddChild("dev", ch, false)
}

// mountFuseDisk serves a file of size bytes at DIR/dev and returns the
// disk and the file's path; it skips the test when FUSE cannot be
// mounted. Unmounted at cleanup, after every hung operation is released.
func mountFuseDisk(t *testing.T, size int) (*fuseDisk, string) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE here (%v): the device-fault test needs a FUSE mount", err)
	}
	d := &fuseDisk{data: make([]byte, size), open: make(chan struct{})}
	close(d.open)
	dir := t.TempDir()
	srv, err := fs.Mount(dir, &fuseRoot{disk: d}, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true, FsName: "strata-faultdisk", Name: "faultdisk", MaxWrite: 1 << 20}})
	if err != nil {
		t.Skipf("cannot mount a FUSE file system here (needs root and /dev/fuse): %v", err)
	}
	t.Cleanup(func() {
		d.set(diskOK)
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return d, filepath.Join(dir, "dev")
}

// set switches the disk to mode; leaving diskHang releases what hangs.
func (d *fuseDisk) set(mode int32) {
	d.gate.Lock()
	defer d.gate.Unlock()
	switch old := d.mode.Swap(mode); {
	case mode == diskHang && old != diskHang:
		d.open = make(chan struct{})
	case mode != diskHang && old == diskHang:
		close(d.open)
	}
}

// enter applies the mode to one operation: it waits while the disk hangs
// (or until the caller is interrupted), and fails with EIO in diskFail.
func (d *fuseDisk) enter(ctx context.Context) syscall.Errno {
	if d.mode.Load() == diskHang {
		d.gate.Lock()
		open := d.open
		d.gate.Unlock()
		select {
		case <-open:
		case <-ctx.Done():
			return syscall.EINTR
		}
	}
	if d.mode.Load() == diskFail {
		return syscall.EIO
	}
	return 0
}

func (d *fuseDisk) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (d *fuseDisk) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := d.enter(ctx); errno != 0 {
		return nil, errno
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if off >= int64(len(d.data)) {
		return fuse.ReadResultData(nil), 0
	}
	n := copy(dest, d.data[off:])
	return fuse.ReadResultData(dest[:n]), 0
}

func (d *fuseDisk) Write(ctx context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := d.enter(ctx); errno != 0 {
		return 0, errno
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if off+int64(len(data)) > int64(len(d.data)) {
		return 0, syscall.ENOSPC
	}
	return uint32(copy(d.data[off:], data)), 0
}

func (d *fuseDisk) Fsync(ctx context.Context, _ fs.FileHandle, _ uint32) syscall.Errno {
	return d.enter(ctx)
}

// Flush (close(2)) never hangs: a process exiting must not wait on it.
func (d *fuseDisk) Flush(context.Context, fs.FileHandle) syscall.Errno { return 0 }

func (d *fuseDisk) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	out.Size = uint64(len(d.data))
	out.Blksize = 4096
	out.Blocks = out.Size / 512
	return 0
}

// Setattr accepts what does not change the size (the file is fixed).
func (d *fuseDisk) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && sz != uint64(len(d.data)) {
		return syscall.EINVAL
	}
	return d.Getattr(ctx, f, out)
}

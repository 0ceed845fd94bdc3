package blockdev

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openFn is unix.Open; tests replace it to simulate a file system that
// refuses O_DIRECT (EINVAL at open), which this kernel's tmpfs no longer does.
var openFn = unix.Open

// handle is an open descriptor, and the io_uring ring its reads go
// through once Disk.UseRing set one; every method retries EINTR.
type handle struct {
	fd   int
	ring *Ring
}

func (h handle) pread(p []byte, off int64) (int, error) {
	if h.ring != nil && !h.ring.broken.Load() {
		n, err := h.ringRead(p, off)
		if !errors.Is(err, ErrRingBroken) {
			return n, err
		}
		// The submission that broke the ring was never taken by the
		// kernel (see Ring.broken), so p is ours: read the rest with
		// pread, as every later read will.
		p, off = p[n:], off+int64(n)
		m, err := h.preadLoop(p, off)
		return n + m, err
	}
	return h.preadLoop(p, off)
}

// ringRead is pread through h.ring: the calling goroutine parks until the
// kernel completes the read, holding no P meanwhile.
func (h handle) ringRead(p []byte, off int64) (int, error) {
	return readFull(p, off, func(b []byte, o int64) (int, error) { return h.ring.ReadAt(h.fd, b, o) })
}

func (h handle) preadLoop(p []byte, off int64) (int, error) {
	return readFull(p, off, func(b []byte, o int64) (int, error) { return unix.Pread(h.fd, b, o) })
}

// readFull calls read until p is full at off, retrying EINTR (and EAGAIN,
// which a ring read may return, up to maxAgain times in a row: a device
// that keeps answering it gets the error, not a spinning worker), and
// reports how much was read.
func readFull(p []byte, off int64, read func([]byte, int64) (int, error)) (int, error) {
	n, again := 0, 0
	for n < len(p) {
		m, err := read(p[n:], off+int64(n))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN) && again < maxAgain:
			again++
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, io.ErrUnexpectedEOF // the file shrank under us
		}
		n, again = n+m, 0
	}
	return n, nil
}

// maxAgain bounds readFull's EAGAIN retries in a row.
const maxAgain = 64

func (h handle) pwrite(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pwrite(h.fd, p[n:], off+int64(n))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, io.ErrShortWrite
		}
		n += m
	}
	return n, nil
}

func (h handle) sync() error {
	for {
		if err := unix.Fdatasync(h.fd); err != unix.EINTR {
			return err
		}
	}
}

// close closes the ring, if any (no read is in flight: Disk.Close holds
// the device's lock), then the descriptor.
func (h handle) close() error {
	var rerr error
	if h.ring != nil {
		rerr = h.ring.Close()
	}
	return errors.Join(unix.Close(h.fd), rerr)
}

// useRing sets up a ring of depth entries for h's reads.
func (h *handle) useRing(depth int) error {
	if h.ring != nil {
		return nil
	}
	r, err := NewRing(uint32(depth))
	if err != nil {
		return err
	}
	h.ring = r
	return nil
}

func openDisk(path string, o *Options) (*Disk, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return openFile(path, o, true)
	case err != nil:
		return nil, fmt.Errorf("blockdev: stat %s: %w", path, err)
	case fi.Mode().IsRegular():
		return openFile(path, o, false)
	case fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0:
		return openBlock(path, o)
	default:
		return nil, fmt.Errorf("%w: %s is neither a block device nor a regular file (mode %v)", ErrUnsupported, path, fi.Mode())
	}
}

// openFD opens path, with O_DIRECT if asked. A file system that refuses
// O_DIRECT at open (EINVAL: older tmpfs, some FUSE) gets a buffered
// descriptor and one warning.
func openFD(path string, flags int, perm uint32, o *Options) (fd int, direct bool, err error) {
	if *o.Direct {
		fd, err = retryEINTR(func() (int, error) { return openFn(path, flags|unix.O_DIRECT, perm) })
		if err != unix.EINVAL {
			return fd, err == nil, err
		}
		o.Logger.Warn("blockdev: the file system refuses O_DIRECT; using buffered I/O", "path", path, "err", err)
	}
	fd, err = retryEINTR(func() (int, error) { return openFn(path, flags, perm) })
	return fd, false, err
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openBlock opens a raw block device with O_EXCL, which the kernel refuses
// with EBUSY while the device is mounted or held exclusively elsewhere.
func openBlock(path string, o *Options) (*Disk, error) {
	fd, direct, err := openFD(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_EXCL, 0, o)
	if errors.Is(err, unix.EBUSY) {
		return nil, fmt.Errorf("%w: open %s exclusively: %w (is it mounted, or opened by another process?)", ErrBusy, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("blockdev: open %s: %w", path, err)
	}
	d, err := sizeBlock(path, fd, o)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	d.direct, d.block = direct, true
	return d, nil
}

func sizeBlock(path string, fd int, o *Options) (*Disk, error) {
	devSize, err := unix.IoctlGetUint64(fd, unix.BLKGETSIZE64)
	if err != nil {
		return nil, fmt.Errorf("blockdev: ioctl BLKGETSIZE64 %s: %w", path, err)
	}
	logical, err := unix.IoctlGetInt(fd, unix.BLKSSZGET)
	if err != nil {
		return nil, fmt.Errorf("blockdev: ioctl BLKSSZGET %s: %w", path, err)
	}
	bs, err := blockSizeFor(path, logical)
	if err != nil {
		return nil, err
	}
	size := roundDown(int64(devSize), bs)
	if o.Size > 0 {
		if o.Size > size {
			return nil, fmt.Errorf("blockdev: %s holds %d usable bytes, less than Options.Size %d", path, size, o.Size)
		}
		size = o.Size
	}
	if size == 0 || size%int64(bs) != 0 {
		return nil, fmt.Errorf("blockdev: %s: size %d is not a positive multiple of block size %d", path, size, bs)
	}
	return &Disk{path: path, h: handle{fd: fd}, size: size, bs: bs, dioAlign: logical}, nil
}

// blockSizeFor is the BlockSize for a kernel-reported direct-I/O alignment:
// max(MinBlockSize, align), so that every I/O CheckIO accepts is valid
// O_DIRECT while the engine can count on 4096 everywhere.
func blockSizeFor(path string, align int) (int, error) {
	if align <= MinBlockSize {
		return MinBlockSize, nil
	}
	if align&(align-1) != 0 || align > 1<<20 {
		return 0, fmt.Errorf("%w: %s reports direct-I/O alignment %d, not a power of two <= 1 MiB", ErrUnsupported, path, align)
	}
	return align, nil
}

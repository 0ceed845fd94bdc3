package blockdev

import (
	"fmt"
	"sync"
)

// Disk is a Device on a raw block device or a regular file, made by Open.
//
// I/O is positional (pread/pwrite on one descriptor, looping on short
// transfers and EINTR), so any number of goroutines may read and write at
// once. A read-write mutex is held shared by every operation (no one waits
// on it but Close) and exclusively by Close: it keeps the descriptor from
// being closed, and its number reused by an unrelated open, while an I/O is
// still in flight. Each call reads the monotonic clock twice (for Stats).
//
// Queue depth and GOMAXPROCS. A goroutine in pread/pwrite keeps its P
// (scheduler slot) until the runtime's sysmon takes it back, at the
// earliest after 20µs; an SSD read takes about that long, so with
// GOMAXPROCS=2 only about three reads are in flight however many goroutines
// issue them. Measured with bench/blockdev-bench (4 KiB random reads, 32
// goroutines, 2 vCPUs): about 60% of fio's IOPS at GOMAXPROCS=2, 75-90%
// at GOMAXPROCS=32, at the same CPU per I/O. Whoever sizes the disk read
// pool should raise GOMAXPROCS to cover it (the bench's P=jobs rows).
//
// Errors from the kernel are wrapped with the operation, the path and the
// offset where the transfer stopped, counted in Stats.Errors, and returned;
// nothing here panics on I/O.
type Disk struct {
	path     string
	h        handle
	size     int64
	bs       int
	dioAlign int // the kernel's alignment for direct I/O, 0 if unknown
	direct   bool
	block    bool // a block device rather than a file

	mu     sync.RWMutex
	closed bool
	c      counters
}

var _ Device = (*Disk)(nil)

// Open opens the block device or regular file at path as a Device: see
// Options for sizing and direct I/O, and the _linux.go files for how. The
// returned Device is a *Disk.
func Open(path string, opts Options) (Device, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	d, err := openDisk(path, &opts)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// ReadAt implements Device.
func (d *Disk) ReadAt(p []byte, off int64) (int, error) {
	if err := CheckIO(p, off, d.size, d.bs); err != nil {
		return 0, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return 0, ErrClosed
	}
	start := monoNow()
	n, err := d.h.pread(p, off)
	if err != nil {
		d.c.errors.Add(1)
		return n, d.ioError("pread", off+int64(n), err)
	}
	d.c.read(n, start)
	return n, nil
}

// UseRing sends d's reads through an io_uring ring of up to depth reads
// in flight (Ring; rounded up to a power of two), from now until Close.
// A goroutine waiting for such a read parks, as one waiting on a socket
// does, and holds no P (scheduler slot): a blocking pread keeps its P
// until the runtime's sysmon takes it back, so on a machine with few
// cores reads in pread starve the goroutines that would use the CPU
// meanwhile, and the device sees fewer reads at once than its callers
// issue. Callers past depth wait for a slot. If the ring breaks (a
// submission fails) reads go back to pread. Writes stay on pwrite.
//
// It returns an error, and reads stay on pread, where io_uring is not
// available: an old kernel, a seccomp filter or
// /proc/sys/kernel/io_uring_disabled. A second call does nothing.
// REQUIRES: depth >= 1.
func (d *Disk) UseRing(depth int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return d.h.useRing(depth)
}

// WriteAt implements Device.
func (d *Disk) WriteAt(p []byte, off int64) (int, error) {
	if err := CheckIO(p, off, d.size, d.bs); err != nil {
		return 0, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return 0, ErrClosed
	}
	start := monoNow()
	n, err := d.h.pwrite(p, off)
	if err != nil {
		d.c.errors.Add(1)
		return n, d.ioError("pwrite", off+int64(n), err)
	}
	d.c.write(n, start)
	return n, nil
}

// Sync implements Device: fdatasync, which also flushes the device's
// volatile write cache.
func (d *Disk) Sync() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	if err := d.h.sync(); err != nil {
		d.c.errors.Add(1)
		return fmt.Errorf("blockdev: sync %s: %w", d.path, err)
	}
	d.c.syncs.Add(1)
	return nil
}

// Close implements Device. It waits for in-flight I/O, then closes the
// descriptor, which also drops the file lock or the exclusive open.
func (d *Disk) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	if err := d.h.close(); err != nil {
		return fmt.Errorf("blockdev: close %s: %w", d.path, err)
	}
	return nil
}

// Size implements Device.
func (d *Disk) Size() int64 { return d.size }

// BlockSize implements Device: max(MinBlockSize, the kernel's logical block
// size or direct-I/O alignment). Any I/O CheckIO accepts is valid O_DIRECT.
func (d *Disk) BlockSize() int { return d.bs }

// Stats implements Device.
func (d *Disk) Stats() Stats { return d.c.snapshot() }

// Path is the path Open was given.
func (d *Disk) Path() string { return d.path }

// Direct reports whether I/O bypasses the page cache (O_DIRECT is on).
func (d *Disk) Direct() bool { return d.direct }

// IsBlockDevice reports whether the store is a raw block device.
func (d *Disk) IsBlockDevice() bool { return d.block }

// DirectIOAlignment is the alignment the kernel reported for direct I/O
// (BLKSSZGET on a block device, statx's dio_offset_align on a file), or 0
// when it reported none. BlockSize is never smaller.
func (d *Disk) DirectIOAlignment() int { return d.dioAlign }

func (d *Disk) ioError(op string, off int64, err error) error {
	return fmt.Errorf("blockdev: %s %s at %d: %w", op, d.path, off, err)
}

// IsDirect reports whether d does direct I/O: it asks d, or the device a
// wrapper such as Faulty holds, for a Direct() bool method. Devices without
// one (MemDevice) report false.
func IsDirect(d Device) bool {
	if x, ok := d.(interface{ Direct() bool }); ok {
		return x.Direct()
	}
	return false
}

// roundDown returns n rounded down to a multiple of bs (a power of two).
func roundDown(n int64, bs int) int64 { return n &^ int64(bs-1) }

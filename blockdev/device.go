// Package blockdev is the seam between strata's disk engine and storage: a
// small Device interface for aligned positional I/O and what implements it.
//
//   - Open (disk.go, disk_linux.go, file_linux.go) returns a *Disk on a raw
//     block device or a regular file. On Linux: O_DIRECT; a block device is
//     opened O_EXCL and sized with BLKGETSIZE64/BLKSSZGET; a file is
//     created if missing, preallocated with fallocate, never shrunk, and
//     guarded by flock against a second opener (ErrBusy). Where the file
//     system cannot do direct I/O (tmpfs) the file is used buffered, with
//     one logged warning; IsDirect tells callers which they got. Off Linux,
//     Open serves regular files with buffered os.File I/O only.
//   - MemDevice (mem.go): in memory, with CrashClone, for tests.
//   - Faulty (faulty.go): wraps any Device and injects failed, torn,
//     bit-flipped and hung I/O on rules set at run time, for tests.
//   - Pool and Buffer (pool.go): aligned buffers, off the Go heap (mmap) on
//     Linux, in power-of-two size classes, reused up to a byte cap;
//     AlignedBuffer (buffer.go) for one-off heap buffers.
//
// Alignment. Every ReadAt and WriteAt must use an offset, a length and a
// buffer address that are multiples of BlockSize(); anything else fails with
// ErrMisaligned before any syscall. I/O outside [0, Size()) fails with
// ErrOutOfRange. A Disk's BlockSize is max(4096, the kernel's direct-I/O
// alignment), so the engine may count on 4096-byte alignment being enough
// on any usual store.
//
// Concurrency. All methods of every Device here are safe for concurrent use;
// positional I/O on distinct or overlapping ranges from many goroutines is
// allowed (overlapping writes have no defined winner). Nothing in the
// package starts a goroutine but a Ring (NewRing, Disk.UseRing): one that
// delivers its completions, until the Ring (the Disk) is closed.
package blockdev

import "unsafe"

// Device is aligned positional I/O on a fixed-size store.
type Device interface {
	// ReadAt reads len(p) bytes at off. p, off and len(p) must be aligned.
	// It returns len(p) and nil, or an error (wrapped, never a panic).
	ReadAt(p []byte, off int64) (int, error)
	// WriteAt writes p at off. p, off and len(p) must be aligned.
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes completed writes durable.
	Sync() error
	// Size is the usable size in bytes, a multiple of BlockSize.
	Size() int64
	// BlockSize is the I/O alignment in bytes, a power of two >= 512.
	BlockSize() int
	// Stats returns a snapshot of the device's I/O counters.
	Stats() Stats
	// Close releases the device. Calls after Close return ErrClosed.
	Close() error
}

// Stats are cumulative I/O counters of a Device.
type Stats struct {
	Reads      uint64 // ReadAt calls that succeeded
	Writes     uint64 // WriteAt calls that succeeded
	ReadBytes  uint64
	WriteBytes uint64
	ReadNanos  uint64 // total time spent in successful reads
	WriteNanos uint64 // total time spent in successful writes
	Syncs      uint64
	Errors     uint64 // calls that returned an error from the store
}

// CheckIO returns ErrMisaligned or ErrOutOfRange if an I/O of p at off on a
// device of the given size and block size would be refused, nil otherwise.
func CheckIO(p []byte, off int64, size int64, blockSize int) error {
	bs := int64(blockSize)
	if off%bs != 0 || int64(len(p))%bs != 0 {
		return ErrMisaligned
	}
	if len(p) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(p)))%uintptr(blockSize) != 0 {
		return ErrMisaligned
	}
	if off < 0 || off > size || int64(len(p)) > size-off {
		return ErrOutOfRange
	}
	return nil
}

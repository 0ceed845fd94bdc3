package blockdev

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is an io_uring instance for positional reads whose completions wake
// Go through an eventfd in the netpoller: a goroutine waiting for a read
// parks like one waiting on a socket, and holds no P (processor) while
// the device works. A blocking pread keeps its P until the scheduler's
// monitor takes it back (tens of µs to 10 ms), so on a 2-core machine a
// few slow reads stall every other goroutine.
//
// Submissions are serialised by a mutex and each is handed to the kernel
// at once (io_uring_enter without waiting); at most the ring's depth of
// reads are in flight, further ReadAt calls wait for a slot. One goroutine
// reads the eventfd and delivers completions. The caller's buffer must
// stay untouched until ReadAt returns (it does: ReadAt waits for the
// completion, whatever happens, and Close waits for reads in flight).
//
// Disk.UseRing sends a Disk's reads through a Ring (the disk engine's
// default runtime, uring, asks for it). BenchmarkDiskReads, alone on the
// machine, shows the ring losing read throughput to a pool of 8 pread
// goroutines while a spinner keeps the Ps busy; behind the proxy, where
// the Ps run requests and the reads come from the read workers, the ring
// served 1.5× the requests a second of the pread pool with 8 workers, and
// 1.9× with 32 (hybrid/disk's doc.go, "Reads and runtimes").
type Ring struct {
	fd    int
	depth uint32

	mu      sync.Mutex // submission side
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray unsafe.Pointer
	sqes    unsafe.Pointer

	cqHead *uint32
	cqTail *uint32
	cqMask uint32
	cqes   unsafe.Pointer

	ringMem []byte // the SQ and CQ rings (one mapping)
	sqeMem  []byte

	efd    *os.File
	slots  chan uint32 // free op slots (bounds reads in flight)
	ops    []ringOp
	closed atomic.Bool
	// broken: an io_uring_enter failed, leaving an SQE the kernel may or
	// may not have taken. The ring is never entered again (without
	// SQPOLL the kernel takes SQEs only then), so that read can never land
	// in a buffer its caller has since reused; every ReadAt fails.
	broken atomic.Bool
	done   chan struct{}
	reaped chan struct{} // closed when complete has returned
}

type ringOp struct {
	done chan int32
	buf  []byte // kept reachable until the read completes
}

// io_uring ABI (linux/io_uring.h).
const (
	uringOffSQRing  = 0
	uringOffSQEs    = 0x10000000
	uringFeatSingle = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	uringOpRead     = 22     // IORING_OP_READ
	uringRegEventfd = 4      // IORING_REGISTER_EVENTFD
	uringSQESize    = 64
	uringCQESize    = 16
)

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// ErrRingClosed is returned by ReadAt after Close.
var ErrRingClosed = errors.New("blockdev: ring closed")

// ErrRingBroken is returned by ReadAt once a submission failed.
var ErrRingBroken = errors.New("blockdev: ring broken by a failed submission")

// NewRing sets up a ring for up to depth reads in flight (rounded up to a
// power of two by the kernel). It fails where io_uring is not available
// (an old kernel, or disabled: /proc/sys/kernel/io_uring_disabled).
func NewRing(depth uint32) (*Ring, error) {
	var p uringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("blockdev: io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd), depth: p.sqEntries, done: make(chan struct{}), reaped: make(chan struct{})}
	if err := r.mapRings(&p); err != nil {
		_ = unix.Close(r.fd)
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		r.unmap()
		return nil, fmt.Errorf("blockdev: eventfd: %w", err)
	}
	e := int32(efd)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegEventfd,
		uintptr(unsafe.Pointer(&e)), 1, 0, 0); errno != 0 {
		_ = unix.Close(efd)
		r.unmap()
		return nil, fmt.Errorf("blockdev: io_uring_register eventfd: %w", errno)
	}
	r.efd = os.NewFile(uintptr(efd), "io_uring-eventfd") // non-blocking: the netpoller waits on it
	n := min(p.sqEntries, p.cqEntries)
	r.slots = make(chan uint32, n)
	r.ops = make([]ringOp, n)
	for i := range n {
		r.ops[i].done = make(chan int32, 1)
		r.slots <- i
	}
	go r.complete()
	return r, nil
}

func (r *Ring) mapRings(p *uringParams) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uringCQESize)
	if p.features&uringFeatSingle == 0 {
		return errors.New("blockdev: io_uring without single mmap (kernel < 5.4)")
	}
	size := max(sqSize, cqSize)
	mem, err := unix.Mmap(r.fd, uringOffSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("blockdev: mmap io_uring rings: %w", err)
	}
	sqes, err := unix.Mmap(r.fd, uringOffSQEs, int(p.sqEntries*uringSQESize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Munmap(mem)
		return fmt.Errorf("blockdev: mmap io_uring sqes: %w", err)
	}
	r.ringMem, r.sqeMem = mem, sqes
	base := unsafe.Pointer(&mem[0])
	r.sqHead = (*uint32)(unsafe.Add(base, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(base, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(base, p.sqOff.ringMask))
	r.sqArray = unsafe.Add(base, p.sqOff.array)
	r.sqes = unsafe.Pointer(&sqes[0])
	r.cqHead = (*uint32)(unsafe.Add(base, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(base, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(base, p.cqOff.ringMask))
	r.cqes = unsafe.Add(base, p.cqOff.cqes)
	return nil
}

func (r *Ring) unmap() {
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
	}
	if r.ringMem != nil {
		_ = unix.Munmap(r.ringMem)
	}
	_ = unix.Close(r.fd)
}

// ReadAt reads len(p) bytes at off of the file fd (one read: a short
// count is returned as is, with io.ErrUnexpectedEOF left to the caller).
func (r *Ring) ReadAt(fd int, p []byte, off int64) (int, error) {
	if r.closed.Load() {
		return 0, ErrRingClosed
	}
	if r.broken.Load() {
		return 0, ErrRingBroken
	}
	var slot uint32
	select {
	case slot = <-r.slots:
	case <-r.done:
		return 0, ErrRingClosed
	}
	op := &r.ops[slot]
	op.buf = p
	if err := r.submit(slot, fd, p, off); err != nil {
		op.buf = nil
		r.slots <- slot // its completion, if any ever comes, reap drops (done has room)
		return 0, err
	}
	res := <-op.done
	op.buf = nil
	r.slots <- slot
	if res < 0 {
		return 0, fmt.Errorf("blockdev: io_uring read: %w", unix.Errno(-res))
	}
	return int(res), nil
}

// submit queues one read SQE with user data slot and hands it to the
// kernel.
func (r *Ring) submit(slot uint32, fd int, p []byte, off int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken.Load() {
		return ErrRingBroken
	}
	tail := atomic.LoadUint32(r.sqTail)
	if tail-atomic.LoadUint32(r.sqHead) >= r.depth {
		return errors.New("blockdev: io_uring submission queue full") // cannot happen: slots bound it
	}
	idx := tail & r.sqMask
	sqe := (*[uringSQESize]byte)(unsafe.Add(r.sqes, uintptr(idx)*uringSQESize))
	*sqe = [uringSQESize]byte{}
	sqe[0] = uringOpRead
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(fd)
	*(*uint64)(unsafe.Pointer(&sqe[8])) = uint64(off)
	if len(p) > 0 {
		*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(&p[0])))
	}
	*(*uint32)(unsafe.Pointer(&sqe[24])) = uint32(len(p))
	*(*uint64)(unsafe.Pointer(&sqe[32])) = uint64(slot)
	*(*uint32)(unsafe.Add(r.sqArray, uintptr(idx)*4)) = idx
	atomic.StoreUint32(r.sqTail, tail+1)
	for {
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 0, 0, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR, unix.EAGAIN, unix.EBUSY:
			continue
		}
		r.broken.Store(true)
		return fmt.Errorf("%w: io_uring_enter: %w", ErrRingBroken, errno)
	}
}

// complete delivers completions each time the eventfd fires, until Close.
func (r *Ring) complete() {
	defer close(r.reaped)
	var b [8]byte
	for {
		r.reap()
		if _, err := r.efd.Read(b[:]); err != nil {
			return // closed (by Close, with nothing in flight)
		}
	}
}

// reap delivers every completion in the CQ.
func (r *Ring) reap() {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		cqe := unsafe.Add(r.cqes, uintptr(head&r.cqMask)*uringCQESize)
		slot := *(*uint64)(cqe)
		res := *(*int32)(unsafe.Add(cqe, 8))
		if slot < uint64(len(r.ops)) {
			select { // never blocks the reaper: a stray completion is dropped
			case r.ops[slot].done <- res:
			default:
			}
		}
	}
	atomic.StoreUint32(r.cqHead, head)
}

// Close waits for the reads in flight, then tears the ring down.
// REQUIRES: no ReadAt starts after Close.
func (r *Ring) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	for range len(r.ops) { // every slot back: nothing in flight
		<-r.slots
	}
	close(r.done)
	err := r.efd.Close() // ends complete
	<-r.reaped
	r.unmap()
	return err
}

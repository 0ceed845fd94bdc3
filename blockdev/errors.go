package blockdev

import "errors"

// Sentinel errors. ErrMisaligned, ErrOutOfRange and ErrClosed are returned
// before any syscall is made, so a caller that gets one knows the device was
// not touched. Check with errors.Is: the errors Open and I/O return wrap
// these and the underlying errno.
var (
	// ErrMisaligned: an offset, a length or a buffer address is not a
	// multiple of the device's block size.
	ErrMisaligned = errors.New("blockdev: misaligned I/O")
	// ErrOutOfRange: the I/O would touch bytes outside [0, Size()).
	ErrOutOfRange = errors.New("blockdev: I/O out of range")
	// ErrClosed: the device was closed.
	ErrClosed = errors.New("blockdev: device closed")
	// ErrBusy: Open found the device or file in use: a block device that
	// is mounted or held open exclusively (O_EXCL gave EBUSY), or a cache
	// file whose lock another opener holds. Two caches must never share
	// one store.
	ErrBusy = errors.New("blockdev: device in use")
	// ErrUnsupported: the path is neither a block device nor a regular
	// file, or this platform cannot open it.
	ErrUnsupported = errors.New("blockdev: unsupported store")
	// ErrInjected is the default error of a Faulty device's faults.
	ErrInjected = errors.New("blockdev: injected fault")
)

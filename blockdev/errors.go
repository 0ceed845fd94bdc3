package blockdev

import "errors"

// Sentinel errors. Each is returned before any syscall is made, so a caller
// that gets one knows the device was not touched. Check with errors.Is.
var (
	// ErrMisaligned: an offset, a length or a buffer address is not a
	// multiple of the device's block size.
	ErrMisaligned = errors.New("blockdev: misaligned I/O")
	// ErrOutOfRange: the I/O would touch bytes outside [0, Size()).
	ErrOutOfRange = errors.New("blockdev: I/O out of range")
	// ErrClosed: the device was closed.
	ErrClosed = errors.New("blockdev: device closed")
)

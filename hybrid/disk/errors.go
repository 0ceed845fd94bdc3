package disk

import "errors"

// Sentinel errors of the disk engine. Check with errors.Is: they are
// returned wrapped with detail.
var (
	// ErrCorrupt: bytes read back from the device failed a magic, range or
	// checksum check. Gets turn it into a miss and a counter; strict
	// recovery refuses to open with it.
	ErrCorrupt = errors.New("hybrid: corrupt data on device")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("hybrid: engine closed")
	// ErrOptions: Options failed validation.
	ErrOptions = errors.New("hybrid: invalid options")
	// ErrDevice: the device cannot hold the configured layout.
	ErrDevice = errors.New("hybrid: device unusable")
	// ErrDeviceTimeout: the device did not answer before a deadline (Close
	// gave up waiting for it).
	ErrDeviceTimeout = errors.New("hybrid: device did not answer in time")
)

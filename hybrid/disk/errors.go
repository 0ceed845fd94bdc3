package disk

import "errors"

// Sentinel errors of the disk engine. Check with errors.Is: they are
// returned wrapped with detail.
var (
	// ErrCorrupt: bytes read back from the device failed a magic, range or
	// checksum check. Gets turn it into a miss and a counter; strict
	// recovery refuses to open with it.
	ErrCorrupt = errors.New("disk: corrupt data on device")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("disk: engine closed")
	// ErrOptions: Options failed validation.
	ErrOptions = errors.New("disk: invalid options")
	// ErrDevice: the device cannot hold the configured layout.
	ErrDevice = errors.New("disk: device unusable")
	// ErrDeviceTimeout: the device did not answer before a deadline (Close
	// gave up waiting for it).
	ErrDeviceTimeout = errors.New("disk: device did not answer in time")
)

package hybrid

import "strata/hybrid/disk"

// Sentinel errors of the hybrid package. Check with errors.Is: they are
// returned wrapped with detail. Each is the disk engine's sentinel of the
// same name, so one check matches whichever layer returned it.
var (
	// ErrCorrupt: bytes read back from the device failed a magic, range or
	// checksum check. Gets turn it into a miss and a counter; strict
	// recovery refuses to open with it.
	ErrCorrupt = disk.ErrCorrupt
	// ErrClosed: the cache or its engine was closed.
	ErrClosed = disk.ErrClosed
	// ErrOptions: Options failed validation.
	ErrOptions = disk.ErrOptions
	// ErrDeviceTimeout: the device did not answer before a deadline (Close
	// gave up waiting for it).
	ErrDeviceTimeout = disk.ErrDeviceTimeout
)

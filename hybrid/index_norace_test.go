//go:build !race

package hybrid

// ixRaceEnabled reports whether the race detector is on; allocation tests
// skip under it because it allocates on its own.
const ixRaceEnabled = false

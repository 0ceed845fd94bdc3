//go:build !race

package disk

// raceEnabled reports whether the race detector is on; allocation tests
// skip under it because it allocates on its own.
const raceEnabled = false

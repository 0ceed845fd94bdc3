//go:build !race

package hybrid

// raceEnabled: the race detector is on; allocation counts are off.
const raceEnabled = false

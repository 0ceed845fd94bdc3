//go:build race

package memory

// raceEnabled: the race detector is on; allocation counts and timings are off.
const raceEnabled = true

//go:build race

package admission

// raceEnabled: the race detector is on, so allocation counts and timing
// are not meaningful.
const raceEnabled = true

//go:build !race

package hybrid

// memRace: the race detector is on; allocation counts and timings are off.
const memRace = false

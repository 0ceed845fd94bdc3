//go:build race

package httpcache

// raceEnabled: the race detector instruments allocations, so the
// zero-allocation tests skip themselves.
const raceEnabled = true

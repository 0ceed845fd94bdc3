//go:build !race

package byterange

// raceEnabled: see race_on_test.go.
const raceEnabled = false

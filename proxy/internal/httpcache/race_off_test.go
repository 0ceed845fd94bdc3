//go:build !race

package httpcache

// raceEnabled: see race_on_test.go.
const raceEnabled = false

//go:build race

package blockdev

const raceEnabled = true

//go:build !invariants

package disk

// invariants is false in production builds: a panic recovered in a
// background goroutine is logged, counted (Stats.Panics) and the
// goroutine carries on. See invariants_on.go.
const invariants = false

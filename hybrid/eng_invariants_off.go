//go:build !invariants

package hybrid

// invariants is false in production builds: a panic recovered in a
// background goroutine is logged, counted (EngineStats.Panics) and the
// goroutine carries on. See eng_invariants_on.go.
const invariants = false

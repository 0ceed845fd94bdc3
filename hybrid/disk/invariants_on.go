//go:build invariants

package disk

// invariants is true under -tags invariants: a panic recovered in a
// background goroutine is re-raised after it is logged and counted, so
// tests fail loudly instead of running on.
const invariants = true

//go:build invariants

package e2e

// Under -tags invariants the binaries are built with it too.
func init() { buildTags = "invariants" }

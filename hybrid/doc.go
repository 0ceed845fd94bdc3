// Package hybrid is strata's hybrid cache: a memory tier (package
// hybrid/memory) in front of an optional disk engine (package
// hybrid/disk), joined by Cache.
//
// Cache.Get asks memory, then disk; a disk hit may be copied into memory
// (Options.Promotion). Cache.Insert stores in memory; under
// WriteOnEviction an entry reaches the disk when memory evicts it, through
// admission (package admission), under WriteOnInsertion at once as well.
// GetOrFetch runs one fetch per key however many callers miss it at the
// same time. Options composes memory.Options and disk.Options; Stats joins
// both tiers' counters. ErrCorrupt is the disk engine's corruption
// sentinel, so errors.Is matches it through either package.
package hybrid

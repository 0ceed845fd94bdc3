// Package hybrid is strata's hybrid cache: a memory tier (package
// hybrid/memory) in front of an optional disk tier of one engine (package
// hybrid/disk) per device, joined by Cache. Each key's disk operations go
// to one engine, picked by a stable hash of the key (devices.go).
//
// Cache.Get asks memory, then disk; a disk hit may be copied into memory
// (Options.Promotion). Cache.Insert stores in memory; under
// WriteOnEviction an entry reaches the disk when memory evicts it, through
// admission (package admission), under WriteOnInsertion at once as well.
// GetOrFetch runs one fetch per key however many callers miss it at the
// same time. A stop keeps the memory tier: WriteDown writes what only
// memory holds to disk, hottest first, and records the memory tier's keys;
// Close then has each engine write its index checkpoint, and the next
// Open reads those keys back into memory in the background (warm.go).
// Options composes memory.Options and disk.Options; Stats joins
// both tiers' counters. ErrCorrupt is the disk engine's corruption
// sentinel, so errors.Is matches it through either package.
package hybrid

// Package memory is the hybrid cache's memory tier (Cache): a
// byte-bounded, sharded, in-process cache of byte keys and values whose
// entries live in off-heap arenas indexed by pointer-free tables, so the
// garbage collector sees no per-entry object. Eviction is S3-FIFO by
// default, or LRU or FIFO (Policy). Options.OnEvict hands each evicted
// entry to its owner (the hybrid Cache offers it to the disk engine)
// without copying the value unless asked (Evicted.CopyValue). Get copies a
// hit's value out; Lend lends a large one's bytes under a pin until the
// caller's Release (lend.go, pin.go). A hit allocates nothing. The package
// imports no other strata package.
package memory

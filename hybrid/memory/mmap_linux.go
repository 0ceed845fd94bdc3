//go:build linux

package memory

import "syscall"

// mapChunk returns size bytes of anonymous, private memory outside the Go
// heap, and true: the garbage collector neither scans it nor counts it
// towards GOGC's target, untouched pages cost no RAM, and the race detector
// does not watch it (the lock-free hit path relies on that: see
// shard.optimisticGet). It falls back to the heap, and false, when the
// kernel refuses the mapping.
func mapChunk(size int) ([]byte, bool) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, size), false
	}
	return b, true
}

// mapArenaChunk is mapChunk for the arena's chunks, with their pages
// faulted in by the kernel at once (MAP_POPULATE). A fresh page touched by
// an insert traps to the kernel to be allocated, under the shard's lock:
// filling an empty memory tier with 1 KiB misses spent 14% of strata's CPU
// there (memory.(*shard).fill) in the peer benchmark, on this VM where a
// trap is dear. Populating a chunk costs one call when it is mapped, the
// size of one chunk (at most maxChunk).
func mapArenaChunk(size int) ([]byte, bool) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		return mapChunk(size)
	}
	return b, true
}

// dropChunk gives a mapped chunk's pages back to the kernel but keeps the
// mapping, so that a lock-free reader still holding an address reads zeros,
// never faults.
func dropChunk(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
}

// unmapChunk unmaps a chunk from mapChunk. Heap fallbacks are left to
// the garbage collector (munmap refuses them: EINVAL is ignored).
func unmapChunk(b []byte) {
	_ = syscall.Munmap(b)
}

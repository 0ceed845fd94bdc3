//go:build !linux

package memory

// mapChunk returns size bytes from the heap, and false (not off-heap). A
// []byte holds no pointers, so the garbage collector does not scan it,
// though it counts towards GOGC.
func mapChunk(size int) ([]byte, bool) {
	return make([]byte, size), false
}

// mapArenaChunk is mapChunk.
func mapArenaChunk(size int) ([]byte, bool) { return mapChunk(size) }

// dropChunk and unmapChunk leave the chunk to the garbage collector.
func dropChunk([]byte)  {}
func unmapChunk([]byte) {}

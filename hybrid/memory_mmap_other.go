//go:build !linux

package hybrid

// memMapChunk returns size bytes from the heap, and false (not off-heap). A
// []byte holds no pointers, so the garbage collector does not scan it,
// though it counts towards GOGC.
func memMapChunk(size int) ([]byte, bool) {
	return make([]byte, size), false
}

// memDropChunk and memUnmapChunk leave the chunk to the garbage collector.
func memDropChunk([]byte)  {}
func memUnmapChunk([]byte) {}

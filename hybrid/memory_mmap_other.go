//go:build !linux

package hybrid

// memMapChunk returns size bytes from the heap. A []byte holds no pointers,
// so the garbage collector does not scan it, though it counts towards GOGC.
func memMapChunk(size int) ([]byte, error) {
	return make([]byte, size), nil
}

// memUnmapChunk leaves the chunk to the garbage collector.
func memUnmapChunk([]byte) {}

//go:build linux

package hybrid

import "syscall"

// memMapChunk returns size bytes of anonymous, private memory outside the Go
// heap: the garbage collector neither scans it nor counts it towards GOGC's
// target, and untouched pages cost no RAM. It falls back to the heap when
// the kernel refuses the mapping.
func memMapChunk(size int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, size), nil
	}
	return b, nil
}

// memUnmapChunk gives a chunk from memMapChunk back. Heap fallbacks are left
// to the garbage collector (munmap refuses them: EINVAL is ignored).
func memUnmapChunk(b []byte) {
	_ = syscall.Munmap(b)
}

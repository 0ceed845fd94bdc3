//go:build !linux

package blockdev

// newBuffer allocates a pointer-free aligned heap buffer: off Linux the
// pool keeps the heap fallback and skips mmap.
func newBuffer(size, align int) *Buffer { return &Buffer{full: AlignedBuffer(size, align)} }

func freeBuffer(b *Buffer) { b.mem, b.full = nil, nil }

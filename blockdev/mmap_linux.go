package blockdev

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

var pageSize = os.Getpagesize()

// newBuffer maps size bytes (a multiple of align) aligned to align. mmap
// gives page alignment; a larger align maps align more bytes and trims.
// If mmap fails (ENOMEM, a vm.max_map_count limit) the buffer comes from
// the heap instead, so Acquire never fails.
func newBuffer(size, align int) *Buffer {
	extra := 0
	if align > pageSize {
		extra = align
	}
	mem, err := unix.Mmap(-1, 0, size+extra, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return &Buffer{full: AlignedBuffer(size, align)}
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	pad := int((uintptr(align) - addr%uintptr(align)) % uintptr(align))
	return &Buffer{full: mem[pad : pad+size : pad+size], mem: mem}
}

// freeBuffer unmaps b's memory (heap buffers are left to the GC).
func freeBuffer(b *Buffer) {
	if b.mem != nil {
		unix.Munmap(b.mem) // EINVAL only on a bad mapping: nothing to undo
	}
	b.mem, b.full = nil, nil
}

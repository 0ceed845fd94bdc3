package blockdev

import "unsafe"

// AlignedBuffer returns a buffer of n bytes whose address is a multiple of
// align (a power of two). The memory comes from the Go heap, holds no
// pointers (so the GC never scans it) and is zeroed by the runtime.
// For buffers reused on hot paths, take them from a Pool instead.
func AlignedBuffer(n, align int) []byte {
	if n == 0 {
		return nil
	}
	raw := make([]byte, n+align)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	pad := int((uintptr(align) - addr%uintptr(align)) % uintptr(align))
	return raw[pad : pad+n : pad+n]
}

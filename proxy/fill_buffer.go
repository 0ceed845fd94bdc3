package proxy

import "sync"

// Slabs: pooled byte buffers in power-of-two size classes from 16 KiB to
// 16 MiB, each with 64 bytes of slack so that a slice plus its header fits
// the class of the slice size. Buffers grow by class as bytes arrive
// (growSlab), never to a size a peer claimed. Only buffers of an exact
// class capacity go back to a pool, so a pool never hoards odd sizes.
const (
	slabMin     = 16 << 10
	slabClasses = 11 // 16 KiB << 10 = 16 MiB
	slabSlack   = 64
)

var slabPools [slabClasses]sync.Pool

// slabBoxes recycles the *[]byte boxes the pools hold, so that neither
// getSlab nor putSlab allocates once warm (putting &b would allocate a box
// per put).
var slabBoxes sync.Pool

func slabClass(n int) int {
	c, size := 0, slabMin
	for size+slabSlack < n && c < slabClasses {
		c++
		size <<= 1
	}
	return c
}

// getSlab returns an empty buffer with capacity at least n.
func getSlab(n int) []byte {
	c := slabClass(n)
	if c >= slabClasses {
		return make([]byte, 0, n)
	}
	if p, ok := slabPools[c].Get().(*[]byte); ok {
		b := (*p)[:0]
		*p = nil
		slabBoxes.Put(p)
		return b
	}
	return make([]byte, 0, slabMin<<c+slabSlack)
}

// putSlab returns b to its pool if it has a class capacity.
func putSlab(b []byte) {
	if cap(b) < slabMin {
		return
	}
	c := slabClass(cap(b))
	if c < slabClasses && cap(b) == slabMin<<c+slabSlack {
		p, _ := slabBoxes.Get().(*[]byte)
		if p == nil {
			p = new([]byte)
		}
		*p = b[:0]
		slabPools[c].Put(p)
	}
}

// growSlab makes room after len(*p), doubling the capacity up to limit.
func growSlab(p *[]byte, limit int) []byte {
	b := *p
	if len(b) < cap(b) || cap(b) >= limit {
		return b
	}
	nb := append(getSlab(min(2*cap(b), limit)), b...)
	putSlab(b)
	*p = nb
	return nb
}

// appendSliceRoom returns b (or a fresh slab) holding only the room for
// a slice header.
func appendSliceRoom(b []byte) []byte {
	if cap(b) < sliceHeaderLen {
		b = getSlab(slabMin)
	}
	return b[:sliceHeaderLen]
}

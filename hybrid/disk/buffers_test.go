package disk

import "testing"

// TestBufClasses: every size up to poolMax gets a class that holds it,
// wastes at most a quarter of it beyond its blocks (a block, below 8),
// is a whole number of blocks, maps back to itself and is pooled.
func TestBufClasses(t *testing.T) {
	for _, bs := range []int{512, 4096} {
		p := bufPool{bs: bs}
		prev := -1
		for n := 1; n <= poolMax; n += 1 + n/97 {
			k := p.class(n)
			size := p.size(k)
			blocks := (n + bs - 1) / bs * bs
			switch {
			case size < n || size%bs != 0:
				t.Fatalf("bs %d: class %d of %d bytes is %d bytes", bs, k, n, size)
			case 4*size > 5*blocks && size > 8*bs:
				t.Fatalf("bs %d: %d bytes (%d in blocks) take %d, over a quarter more", bs, n, blocks, size)
			case p.class(size) != k:
				t.Fatalf("bs %d: class of %d bytes is %d, class of its size %d is %d", bs, n, k, size, p.class(size))
			case k < prev:
				t.Fatalf("bs %d: class of %d bytes is %d, below %d for fewer", bs, n, k, prev)
			case k >= len(p.pools):
				t.Fatalf("bs %d: class %d of %d bytes is not pooled", bs, k, n)
			}
			prev = k
		}
	}
	p := bufPool{bs: 4096}
	if got := p.size(p.class(256<<10 + 300)); got != 320<<10 {
		t.Errorf("a 256 KiB value with its key and header takes %d bytes, want 320 KiB", got)
	}
}

package blockdev

import (
	"sync"
	"testing"
	"unsafe"
)

func TestPoolAcquire(t *testing.T) {
	p := NewPool(4096, 1<<20)
	defer p.Close()
	tests := []struct {
		n, cap int
	}{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {100 << 10, 128 << 10}, {1 << 20, 1 << 20},
	}
	for _, tc := range tests {
		b := p.Acquire(tc.n)
		if len(b.B) != tc.n || cap(b.B) != tc.cap {
			t.Errorf("Acquire(%d): len %d cap %d, want cap %d", tc.n, len(b.B), cap(b.B), tc.cap)
		}
		if addr := uintptr(unsafe.Pointer(unsafe.SliceData(b.B[:cap(b.B)]))); addr%4096 != 0 {
			t.Errorf("Acquire(%d): address %#x not aligned", tc.n, addr)
		}
		b.B = b.B[:cap(b.B)]
		b.B[0], b.B[len(b.B)-1] = 1, 1 // the memory is writable end to end
		p.Release(b)
	}
}

func TestPoolReuseAndCap(t *testing.T) {
	p := NewPool(4096, 16<<10) // room for four 4 KiB buffers or one 16 KiB
	defer p.Close()
	var bufs []*Buffer
	for range 6 {
		bufs = append(bufs, p.Acquire(4096))
	}
	for _, b := range bufs {
		p.Release(b)
	}
	if s := p.Stats(); s.RetainedBytes != 16<<10 || s.Misses != 6 {
		t.Fatalf("after releasing 6: %+v, want 16 KiB retained", s)
	}
	b := p.Acquire(100)
	if s := p.Stats(); s.Hits != 1 || s.RetainedBytes != 12<<10 {
		t.Fatalf("after a hit: %+v", s)
	}
	if b != bufs[3] { // LIFO: the last one retained goes out first
		t.Error("reuse is not LIFO")
	}
	b.B[0] = 42
	p.Release(b)
	p.Release(b) // twice: ignored
	if s := p.Stats(); s.RetainedBytes != 16<<10 {
		t.Fatalf("double release changed the count: %+v", s)
	}
	if b2 := p.Acquire(4096); b2.B[0] != 42 {
		t.Error("reuse cleared the buffer (it must not: callers overwrite)")
	} else {
		p.Release(b2)
	}
	small := NewPool(512, 1<<20)
	huge := small.Acquire(512<<numClasses + 1) // beyond the classes: unpooled, untouched
	if len(huge.B) != 512<<numClasses+1 {
		t.Fatalf("huge len %d", len(huge.B))
	}
	small.Release(huge)
	if s := small.Stats(); s.RetainedBytes != 0 {
		t.Fatalf("an unpooled buffer was retained: %+v", s)
	}
	p.Close()
	if s := p.Stats(); s.RetainedBytes != 0 {
		t.Fatalf("Close kept %d bytes", s.RetainedBytes)
	}
	b3 := p.Acquire(4096)
	p.Release(b3)
	if s := p.Stats(); s.RetainedBytes != 0 {
		t.Fatal("a closed pool retained a buffer")
	}
}

func TestPoolAcquireAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	p := NewPool(4096, 1<<20)
	defer p.Close()
	p.Release(p.Acquire(64 << 10))
	allocs := testing.AllocsPerRun(1000, func() {
		b := p.Acquire(64 << 10)
		b.B[0] = 1
		p.Release(b)
	})
	if allocs != 0 {
		t.Fatalf("Acquire+Release on a hit: %v allocations, want 0", allocs)
	}
}

func TestPoolConcurrent(t *testing.T) {
	p := NewPool(4096, 64<<10)
	defer p.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				b := p.Acquire(4096 << ((g + i) % 4))
				b.B[0] = byte(g) // owned: no one else writes it
				if b.B[0] != byte(g) {
					t.Error("buffer shared between owners")
				}
				p.Release(b)
			}
		})
	}
	wg.Wait()
	if s := p.Stats(); s.RetainedBytes > 64<<10 || s.Hits+s.Misses != 1600 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPoolBigBlock(t *testing.T) {
	p := NewPool(64<<10, 1<<20) // alignment beyond the page size
	defer p.Close()
	b := p.Acquire(1)
	if addr := uintptr(unsafe.Pointer(unsafe.SliceData(b.B))); addr%(64<<10) != 0 || cap(b.B) != 64<<10 {
		t.Fatalf("address %#x cap %d", addr, cap(b.B))
	}
	p.Release(b)
}

func BenchmarkPoolAcquireRelease(b *testing.B) {
	p := NewPool(4096, 1<<30)
	defer p.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Release(p.Acquire(16 << 10))
		}
	})
}

package hybrid

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"strata/hybrid/memory"
)

func TestCacheLend(t *testing.T) {
	c, _ := testCache(t, 256<<10, nil)
	large := bytes.Repeat([]byte("L"), memory.LendMin)
	small := []byte("small value")
	onDisk := bytes.Repeat([]byte("d"), 1000)
	c.Insert([]byte("disk"), onDisk, time.Time{})
	for i := range 600 { // push "disk" out to the disk tier
		c.Insert(fmt.Appendf(nil, "k%d", i), onDisk, time.Time{})
	}
	c.Insert([]byte("large"), large, time.Time{})
	c.Insert([]byte("small"), small, time.Time{})
	for _, tc := range []struct {
		key  string
		tier Tier
		lent bool
		want []byte
	}{
		{"large", TierMemory, true, large},
		{"small", TierMemory, false, small},
		{"disk", TierDisk, false, onDisk},
		{"absent", TierMiss, false, nil},
	} {
		t.Run(tc.key, func(t *testing.T) {
			var v Value
			tier, ok := c.Lend([]byte(tc.key), &v)
			defer v.Release()
			if ok != (tc.tier != TierMiss) || tier != tc.tier || v.Lent() != tc.lent || !bytes.Equal(v.Bytes(), tc.want) {
				t.Fatalf("Lend = %v %v lent %v, %d bytes; want %v lent %v, %d bytes",
					tier, ok, v.Lent(), len(v.Bytes()), tc.tier, tc.lent, len(tc.want))
			}
			if n := len(v.Spans()); v.Len() != len(tc.want) || n != min(len(tc.want), 1) || n == 1 && !bytes.Equal(v.Spans()[0], tc.want) {
				t.Fatalf("Len %d, %d pieces; want the value in one", v.Len(), n)
			}
		})
	}
}

// TestCacheLendEvictedToDisk: a lent value whose entry the memory tier
// evicts (and writes to disk) meanwhile reads unchanged until Release, and
// its bytes are charged to memory until then.
func TestCacheLendEvictedToDisk(t *testing.T) {
	c, _ := testCache(t, 1<<20, func(o *Options) { o.Memory.Policy = memory.FIFO })
	want := bytes.Repeat([]byte("v"), 64<<10)
	c.Insert([]byte("lent"), want, time.Time{})
	var v Value
	if tier, ok := c.Lend([]byte("lent"), &v); !ok || tier != TierMemory || !v.Lent() {
		t.Fatalf("Lend: %v %v lent %v", tier, ok, v.Lent())
	}
	for i := range 40 {
		c.Insert(fmt.Appendf(nil, "fill%d", i), bytes.Repeat([]byte{byte(i)}, 64<<10), time.Time{})
	}
	if !bytes.Equal(v.Bytes(), want) {
		t.Fatal("lent bytes changed after eviction")
	}
	if st := c.mem.Stats(); st.Lent == 0 {
		t.Fatalf("evicted while lent, but Stats.Lent = 0: %+v", st)
	}
	v.Release()
	if st := c.mem.Stats(); st.Lent != 0 {
		t.Fatalf("after Release: Lent %d", st.Lent)
	}
	got, tier, ok := c.Get([]byte("lent"), nil)
	if !ok || tier != TierDisk || !bytes.Equal(got, want) {
		t.Fatalf("after eviction: Get %v %v", tier, ok)
	}
}

// TestCacheLendDiskHeld: a disk hit lends the engine's read buffer, which
// stays whole while the key is overwritten and removed and its region is
// reclaimed, and goes back to the pool once on Release, also after Close.
func TestCacheLendDiskHeld(t *testing.T) {
	c, _ := testCache(t, 256<<10, func(o *Options) { o.Promotion = PromoteNever })
	want := bytes.Repeat([]byte("d"), 64<<10)
	c.Insert([]byte("disk"), want, time.Time{})
	fill := bytes.Repeat([]byte("f"), 64<<10)
	for i := range 8 { // push "disk" out to the disk tier
		c.Insert(fmt.Appendf(nil, "k%d", i), fill, time.Time{})
	}
	settleDisk(t, c)
	var v Value
	if tier, ok := c.Lend([]byte("disk"), &v); !ok || tier != TierDisk || !bytes.Equal(v.Bytes(), want) {
		t.Fatalf("Lend: %v %v, %d bytes", tier, ok, len(v.Bytes()))
	}
	if s := c.Stats(); s.Disk.ReadBuffersOut != 1 {
		t.Fatalf("ReadBuffersOut %d while lent, want 1", s.Disk.ReadBuffersOut)
	}
	c.Insert([]byte("disk"), fill, time.Time{})
	c.Remove([]byte("disk"))
	for i := range 700 { // 44 MiB through a 32 MiB device
		c.Insert(fmt.Appendf(nil, "r%d", i), fill, time.Time{})
		if i%32 == 0 {
			settleDisk(t, c) // keep up: a full queue drops writes
		}
	}
	if s := c.Stats(); s.Disk.Reclaims == 0 {
		t.Fatal("no region was reclaimed")
	}
	if !bytes.Equal(v.Bytes(), want) {
		t.Fatal("lent disk bytes changed")
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	v.Release()
	v.Release()
	if s := c.Stats(); s.Disk.ReadBuffersOut != 0 || s.Disk.BadReleases != 0 {
		t.Fatalf("after Release: out %d, returned twice %d", s.Disk.ReadBuffersOut, s.Disk.BadReleases)
	}
}

// settleDisk waits until the disk tier has written everything queued.
func settleDisk(t *testing.T, c *Cache) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s := c.Stats().Disk; s.QueuedBytes != 0 || s.PendingKeys != 0; s = c.Stats().Disk {
		if time.Now().After(deadline) {
			t.Fatalf("writes not done: queued=%d pending=%d", s.QueuedBytes, s.PendingKeys)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// TestSetCopyPieces: a fake's copy cut in pieces reads as the value,
// piece by piece and whole; too few bytes for the pieces, or n below 2,
// give one piece.
func TestSetCopyPieces(t *testing.T) {
	for _, tc := range []struct{ size, n, want int }{{10, 3, 3}, {3, 3, 3}, {2, 3, 1}, {10, 1, 1}, {10, 0, 1}, {1000, 7, 7}} {
		b := make([]byte, tc.size)
		for i := range b {
			b[i] = byte(i)
		}
		var v Value
		v.SetCopyPieces(b, tc.n)
		sp := v.Spans()
		var joined []byte
		for _, p := range sp {
			if len(p) == 0 {
				t.Errorf("%+v: an empty piece", tc)
			}
			joined = append(joined, p...)
		}
		if len(sp) != tc.want || !bytes.Equal(joined, b) || !bytes.Equal(v.Bytes(), b) || v.Len() != tc.size {
			t.Errorf("%+v: %d pieces joining to %d bytes, Bytes %d, Len %d", tc, len(sp), len(joined), len(v.Bytes()), v.Len())
		}
		v.Release()
		if len(v.Spans()) != 0 {
			t.Errorf("%+v: pieces left after Release", tc)
		}
	}
}

package hybrid

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"strata/admission"
	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// TestCacheEvictionCopiesOnlyAdmitted: under write-on-eviction, an evicted
// entry that admission refuses is never copied out of the memory tier
// (Stats.Memory.EvictCopies stays put), and one it admits is copied exactly once
// and reads back intact from disk.
func TestCacheEvictionCopiesOnlyAdmitted(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	c, _ := testCache(t, 64<<10, func(o *Options) {
		o.Admission = &toggleAdmission{refuse: &refuse}
		o.Memory.BlockSize = 64 // chains of many blocks, fragmented below
	})
	value := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "<%d>", i), 50+i%300) }
	for i := range 300 {
		c.Insert(fmt.Appendf(nil, "r%d", i), value(i), time.Time{})
		if i%3 == 0 {
			c.Remove(fmt.Appendf(nil, "r%d", i))
		}
	}
	s := c.Stats()
	if s.Memory.Evictions == 0 || s.Memory.EvictCopies != 0 || s.EvictedToDisk != 0 || s.Disk.DropAdmission == 0 {
		t.Fatalf("refusing: stats %+v", s)
	}
	refuse.Store(false)
	for i := range 300 {
		c.Insert(fmt.Appendf(nil, "a%d", i), value(i), time.Time{})
	}
	s2 := c.Stats()
	copies, toDisk := s2.Memory.EvictCopies, s2.EvictedToDisk
	if toDisk == 0 || copies != toDisk || s2.Disk.DropFill != 0 {
		t.Fatalf("admitting: %d copies for %d entries to disk; stats %+v", copies, toDisk, s2)
	}
	onDisk := 0
	for i := range 300 {
		k := fmt.Appendf(nil, "a%d", i)
		if v, ok := c.disks.of(k).Get(k, nil); ok {
			onDisk++
			if !bytes.Equal(v, value(i)) {
				t.Fatalf("%s on disk: %q, want %q", k, v, value(i))
			}
		}
	}
	if onDisk == 0 {
		t.Fatal("no admitted entry on disk")
	}
}

// TestCacheEvictionAllocatesNothing: an Insert whose eviction admission
// refuses allocates nothing. That also proves the memory.Evicted and its
// CopyValue method value stay on the stack on the admitted path (escape is
// decided statically, for every path alike); the admitted path itself is
// not counted, as its pooled engine items come back only when the flusher
// has written them.
func TestCacheEvictionAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	var refuse atomic.Bool
	refuse.Store(true)
	c, _ := testCache(t, 64<<10, func(o *Options) { o.Admission = &toggleAdmission{refuse: &refuse} })
	val := bytes.Repeat([]byte("v"), 3000)
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	i := 0
	insert := func() { c.Insert(keys[i%len(keys)], val, time.Time{}); i++ }
	for range 1000 {
		insert()
	}
	before := c.Stats()
	if n := testing.AllocsPerRun(200, insert); n != 0 {
		t.Errorf("%v allocs per Insert", n)
	}
	after := c.Stats()
	if after.Memory.Evictions-before.Memory.Evictions < 200 || after.Disk.DropAdmission == before.Disk.DropAdmission {
		t.Fatalf("evictions not measured: before %+v, after %+v", before, after)
	}
}

// halfAdmission admits the keys whose hash is even: about half, as the
// bench's rate limit does.
type halfAdmission struct{}

func (halfAdmission) Admit(h uint64, _ int) admission.Decision {
	if h&1 == 0 {
		return admission.Admitted
	}
	return admission.Rejected
}
func (halfAdmission) Record(uint64) {}
func (halfAdmission) Charge(int)    {}

// BenchmarkCacheInsertEvict: one writer inserts fresh 32 KiB values into a
// full memory tier; each Insert evicts about one entry, which admission
// refuses half the time (hybrid-bench's insert path, without the
// bench's other goroutines). ns/op is the CPU of an Insert and its
// eviction; the flusher's writes to the MemDevice run beside it.
func BenchmarkCacheInsertEvict(b *testing.B) {
	benchInsertEvict(b, 32<<10, halfAdmission{})
}

// BenchmarkCacheInsertEvictSmall is BenchmarkCacheInsertEvict of a 1 KiB
// miss's record (1.3 KiB), every eviction admitted: the store path of the
// peer benchmark's misses once the memory tier is full.
func BenchmarkCacheInsertEvictSmall(b *testing.B) {
	benchInsertEvict(b, 1300, nil)
}

func benchInsertEvict(b *testing.B, size int, ctl admission.Controller) {
	dev, err := blockdev.NewMem(256<<20, 4096)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Open(Options{
		Memory:    memory.Options{Capacity: 16 << 20, Shards: 4},
		Disk:      disk.Options{RegionSize: 16 << 20, QueueBytes: 64 << 20},
		Device:    dev,
		Admission: ctl,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	val := bytes.Repeat([]byte("v"), size)
	key := make([]byte, 16)
	insert := func(i int) {
		binary.LittleEndian.PutUint64(key, uint64(i))
		c.Insert(key, val, time.Time{})
	}
	for i := range 2 * (16 << 20) / size {
		insert(-i - 1)
	}
	b.SetBytes(int64(len(val)))
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for i := 0; b.Loop(); i++ {
		insert(i)
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	if st := c.Stats(); st.EvictedToDisk == 0 || (ctl != nil && st.Disk.DropAdmission == 0) {
		b.Fatalf("no evictions to disk or refusals: %+v", st)
	}
}

// processCPU returns the process's user+system CPU time in nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package disk

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"strata/blockdev"
)

var fuzzBase struct {
	once sync.Once
	dev  *blockdev.MemDevice
}

// fuzzOpts: the smallest legal device: 1 flusher, 3 regions of 1 MiB.
func fuzzOpts() Options {
	o := testOpts()
	o.Flushers, o.CleanRegions, o.ReadWorkers = 1, 1, 1
	o.Runtime = RuntimeDisabled
	return o
}

// fuzzDevice returns a copy of a device holding f0..f199 in several
// batches and regions.
func fuzzDevice(t testing.TB) *blockdev.MemDevice {
	fuzzBase.once.Do(func() {
		dev := newMem(t, 1024+3<<20)
		e := openT(t, dev, fuzzOpts())
		for i := range 200 {
			k := []byte(fmt.Sprintf("f%d", i))
			e.Insert(k, mval(k, 1, 100+i*40), time.Time{})
			if i%20 == 0 {
				settle(t, e)
			}
		}
		closeT(t, e)
		fuzzBase.dev = dev
	})
	return fuzzBase.dev.CrashClone()
}

// FuzzRecovery overwrites random device bytes (anywhere: superblock,
// region headers, batch headers, records, entries) and reopens in quiet and
// strict mode: open either succeeds or fails with ErrCorrupt, and every hit
// is a whole value of its key.
func FuzzRecovery(f *testing.F) {
	f.Add(uint32(0), []byte{1})
	f.Add(uint32(1024), []byte{0, 0, 0, 0})
	f.Add(uint32(1024+40), []byte{0xff})
	f.Add(uint32(1024+1<<20+100), []byte("garbage!"))
	f.Add(uint32(1024+1<<20+12), []byte{0x5a}) // region 1's header
	f.Add(uint32(1024+2<<20), []byte("REGN"))  // region 2's header, unused or not
	f.Fuzz(func(t *testing.T, off uint32, patch []byte) {
		dev := fuzzDevice(t)
		off %= uint32(dev.Size())
		if len(patch) > 4096 {
			patch = patch[:4096]
		}
		writeRaw(t, dev, int64(off), patch)
		for _, mode := range []RecoveryMode{RecoveryStrict, RecoveryQuiet} {
			o := fuzzOpts()
			o.Recovery = mode
			e, err := Open(dev.CrashClone(), o)
			if err != nil {
				if mode == RecoveryQuiet || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: %v", mode, err)
				}
				continue
			}
			for i := range 200 {
				k := []byte(fmt.Sprintf("f%d", i))
				if v, ok := e.Get(k, nil); ok {
					if ver, whole := checkWhole(k, v); !whole || ver != 1 {
						t.Fatalf("%s: %s: bad value", mode, k)
					}
				}
			}
			closeT(t, e)
		}
	})
}

// writeRaw writes p at any offset through aligned read-modify-write.
func writeRaw(t testing.TB, dev *blockdev.MemDevice, off int64, p []byte) {
	bs := int64(dev.BlockSize())
	start := alignDown(off, bs)
	end := min(alignUp(off+int64(len(p)), bs), dev.Size())
	buf := blockdev.AlignedBuffer(int(end-start), int(bs))
	if _, err := dev.ReadAt(buf, start); err != nil {
		t.Fatal(err)
	}
	copy(buf[off-start:], p)
	if _, err := dev.WriteAt(buf, start); err != nil {
		t.Fatal(err)
	}
}

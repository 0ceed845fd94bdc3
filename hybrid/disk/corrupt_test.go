package disk

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
)

// flipByte xors one byte of the device at off.
func flipByte(t *testing.T, dev *blockdev.MemDevice, off int64, mask byte) {
	t.Helper()
	bs := int64(dev.BlockSize())
	blk := blockdev.AlignedBuffer(int(bs), int(bs))
	base := alignDown(off, bs)
	if _, err := dev.ReadAt(blk, base); err != nil {
		t.Fatal(err)
	}
	blk[off-base] ^= mask
	if _, err := dev.WriteAt(blk, base); err != nil {
		t.Fatal(err)
	}
}

// testBatch is where a batch sits on the device and which keys it holds.
type testBatch struct {
	pos, recOff int64 // device offsets of the batch and of its records
	hashes      map[uint64]bool
}

// twoBatches writes keys a0..a9, then (after they are written) b0..b9,
// closes the engine and returns the device, the device offset of a3's
// entry, and a3's batch. All keys land in one region.
func twoBatches(t *testing.T) (dev *blockdev.MemDevice, entryOff int64, a3 testBatch, all []testBatch) {
	dev = newMem(t, 16<<20)
	e := openT(t, dev, testOpts())
	for _, p := range []string{"a", "b"} {
		for i := range 10 {
			k := []byte(fmt.Sprintf("%s%d", p, i))
			e.Insert(k, mval(k, 1, 300), time.Time{})
		}
		settle(t, e)
	}
	v, ok := e.ix.get(xxhash.Sum64String("a3"))
	if !ok {
		t.Fatal("a3 not indexed")
	}
	r, off, _ := e.lay.unpack(v)
	entryOff = e.lay.regionBase(r) + int64(off)
	all = regionBatches(t, e, r)
	for _, b := range all {
		if b.hashes[xxhash.Sum64String("a3")] {
			a3 = b
		}
	}
	if len(all) < 2 || len(all) > 0 && all[len(all)-1].hashes[xxhash.Sum64String("a3")] {
		t.Fatalf("want a3 in a batch followed by another, got %d batches", len(all))
	}
	closeT(t, e)
	dropCheckpoint(t, dev) // these tests are of the scan
	return dev, entryOff, a3, all
}

// regionBatches lists the batches of region r.
func regionBatches(t *testing.T, e *Engine, r uint32) []testBatch {
	s := newScan(e)
	s.reset(r, false)
	var out []testBatch
	for pos := int64(regionHeaderSize); pos+batchHeaderSize <= e.lay.regionSize; {
		recs, length, err := s.batch(pos, e.regions.regions[r].seq, false)
		if errors.Is(err, errChainEnd) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b := testBatch{pos: e.lay.regionBase(r) + pos, hashes: map[uint64]bool{}}
		b.recOff = b.pos + length - int64(len(recs))*indexRecordSize
		for _, rec := range recs {
			b.hashes[rec.hash] = true
		}
		out = append(out, b)
		pos = alignUp(pos+length, e.lay.blockSize)
	}
	return out
}

func TestCorruptEntry(t *testing.T) {
	dev, entryOff, _, _ := twoBatches(t)
	flipByte(t, dev, entryOff+entryHeaderSize+5, 0x40) // a byte of a3's key
	for _, mode := range []RecoveryMode{RecoveryNone, RecoveryQuiet, RecoveryStrict} {
		o := testOpts()
		o.Recovery = mode
		e, err := Open(dev.CrashClone(), o)
		if mode == RecoveryStrict {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("strict opened a damaged device: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if mode == RecoveryQuiet {
			if _, ok := e.Get([]byte("a3"), nil); ok {
				t.Fatal("damaged entry served")
			}
			if s := e.Stats(); s.Corruptions != 1 {
				t.Fatalf("corruptions %d", s.Corruptions)
			}
			for _, k := range []string{"a2", "a4", "b3"} {
				if v, ok := e.Get([]byte(k), nil); !ok || !equalVal(k, v) {
					t.Fatalf("%s lost", k)
				}
			}
		}
		closeT(t, e)
	}
}

func TestCorruptIndexPage(t *testing.T) {
	dev, _, a3, _ := twoBatches(t)
	flipByte(t, dev, a3.recOff+3, 0x01) // a hash byte of the batch's first record
	o := testOpts()
	o.Recovery = RecoveryStrict
	if _, err := Open(dev.CrashClone(), o); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("strict: %v", err)
	}
	o.Recovery = RecoveryQuiet
	e := openT(t, dev.CrashClone(), o)
	defer closeT(t, e)
	if s := e.Stats(); s.RecoverySkipped != 1 {
		t.Fatalf("skipped %d", s.RecoverySkipped)
	}
	for i := range 20 { // the damaged batch is skipped, the others kept
		k := fmt.Sprintf("%c%d", "ab"[i/10], i%10)
		v, ok := e.Get([]byte(k), nil)
		if a3.hashes[xxhash.Sum64String(k)] {
			if ok {
				t.Fatalf("%s served from a skipped batch", k)
			}
		} else if !ok || !equalVal(k, v) {
			t.Fatalf("%s lost", k)
		}
	}
}

func TestTornTail(t *testing.T) {
	dev, _, _, all := twoBatches(t)
	last := all[len(all)-1]
	flipByte(t, dev, last.recOff+1, 0xff) // the last batch's records never fully landed
	o := testOpts()
	for _, mode := range []RecoveryMode{RecoveryQuiet, RecoveryStrict} {
		o.Recovery = mode
		e := openT(t, dev.CrashClone(), o) // a torn tail is not corruption
		s := e.Stats()
		if s.RecoveryTornTails != 1 || s.Recovered != uint64(20-len(last.hashes)) {
			t.Fatalf("%s: torn %d recovered %d", mode, s.RecoveryTornTails, s.Recovered)
		}
		for i := range 20 {
			k := fmt.Sprintf("%c%d", "ab"[i/10], i%10)
			v, ok := e.Get([]byte(k), nil)
			if last.hashes[xxhash.Sum64String(k)] == ok || ok && !equalVal(k, v) {
				t.Fatalf("%s: %s served=%v", mode, k, ok)
			}
		}
		closeT(t, e)
	}
}

func TestCorruptSuperblock(t *testing.T) {
	dev, _, _, _ := twoBatches(t)
	one := dev.CrashClone()
	flipByte(t, one, 20, 0x08) // copy 0 only: repaired from copy 1
	for _, mode := range []RecoveryMode{RecoveryQuiet, RecoveryStrict} {
		o := testOpts()
		o.Recovery = mode
		e := openT(t, one.CrashClone(), o)
		if e.Stats().Recovered != 20 {
			t.Fatalf("%s: recovered %d", mode, e.Stats().Recovered)
		}
		closeT(t, e)
	}
	both := one.CrashClone()
	flipByte(t, both, 512+20, 0x08)
	o := testOpts()
	o.Recovery = RecoveryStrict
	if _, err := Open(both.CrashClone(), o); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("strict with both copies damaged: %v", err)
	}
	o.Recovery = RecoveryQuiet
	e := openT(t, both, o)
	defer closeT(t, e)
	if e.Stats().Recovered != 0 {
		t.Fatal("quiet recovered entries under a damaged superblock")
	}
}

func equalVal(k string, v []byte) bool {
	ver, whole := checkWhole([]byte(k), v)
	return whole && ver == 1
}

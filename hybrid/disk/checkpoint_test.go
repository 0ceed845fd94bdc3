package disk

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"strata/blockdev"
)

// ckptFill writes keys k0..k(n-1) at version ver (every third removed
// when remove is set) and settles.
func ckptFill(t *testing.T, e *Engine, n int, ver uint64, remove bool) {
	t.Helper()
	for i := range n {
		k := fmt.Appendf(nil, "k%d", i)
		if remove && i%3 == 0 {
			e.Remove(k)
			continue
		}
		e.Insert(k, mval(k, ver, 200), time.Time{})
	}
	settle(t, e)
}

// ckptCheck fails unless every key reads back at version ver (removed
// ones missing when remove is set).
func ckptCheck(t *testing.T, e *Engine, n int, ver uint64, remove bool) {
	t.Helper()
	for i := range n {
		k := fmt.Appendf(nil, "k%d", i)
		v, ok := e.Get(k, nil)
		if remove && i%3 == 0 {
			if ok {
				t.Fatalf("%s: removed key served", k)
			}
			continue
		}
		if !ok || !bytes.Equal(v, mval(k, ver, 200)) {
			t.Fatalf("%s: ok=%v, want version %d", k, ok, ver)
		}
	}
}

// superblockBlocks returns a copy of both superblock blocks (with any
// checkpoint descriptor), for putting back later.
func superblockBlocks(t *testing.T, dev blockdev.Device) []byte {
	t.Helper()
	bs := dev.BlockSize()
	b := blockdev.AlignedBuffer(superblockCopies*bs, bs)
	if _, err := dev.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckpoint: a start after a clean close loads the checkpoint (no
// batch scanned) and serves what was written; every doubt falls back to
// the scan and still serves the newest values.
func TestCheckpoint(t *testing.T) {
	const n = 200
	cases := []struct {
		name     string
		damage   func(t *testing.T, dev *blockdev.MemDevice, e *Engine)
		loaded   bool
		ver      uint64
		removals bool
	}{
		{name: "clean", loaded: true, ver: 1},
		{name: "descriptor damaged", ver: 1, damage: func(t *testing.T, dev *blockdev.MemDevice, _ *Engine) {
			flipByte(t, dev, ckptDescOff+20, 0x10)
			flipByte(t, dev, int64(dev.BlockSize())+ckptDescOff+20, 0x10)
		}},
		{name: "checkpoint damaged", ver: 1, damage: func(t *testing.T, dev *blockdev.MemDevice, e *Engine) {
			d, _, _ := parseDesc(superblockBlocks(t, dev))
			flipByte(t, dev, e.lay.regionBase(d.regions[0])+e.lay.blockSize+ckptHeaderSize+100, 0x01)
		}},
		{name: "descriptor names an absurd length", ver: 1, damage: func(t *testing.T, dev *blockdev.MemDevice, _ *Engine) {
			sb := superblockBlocks(t, dev)
			bs := dev.BlockSize()
			d, _, _ := parseDesc(sb[:bs])
			d.length = 1 << 50
			putDesc(sb[:bs], &d)
			putDesc(sb[bs:], &d)
			if _, err := dev.WriteAt(sb, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "descriptor dropped (a crash after a start)", ver: 1, damage: func(t *testing.T, dev *blockdev.MemDevice, _ *Engine) {
			dropCheckpoint(t, dev)
		}},
		{
			// An engine that ignores checkpoints opened the device, wrote
			// and removed, and left the descriptor in place.
			name: "stale descriptor", ver: 2, removals: true,
			damage: func(t *testing.T, dev *blockdev.MemDevice, _ *Engine) {
				sb := superblockBlocks(t, dev)
				o := testOpts()
				e := openT(t, dev, o)
				ckptFill(t, e, n, 2, true)
				closeT(t, e)
				if _, err := dev.WriteAt(sb, 0); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dev := newMem(t, 16<<20)
			e := openT(t, dev, testOpts())
			ckptFill(t, e, n, 1, false)
			e.SetHotSet([]uint64{1, 2, 3})
			closeT(t, e)
			if tc.damage != nil {
				tc.damage(t, dev, e)
			}
			e = openT(t, dev.CrashClone(), testOpts())
			defer closeT(t, e)
			s := e.Stats()
			if loaded := s.RecoveredBatches == 0; loaded != tc.loaded {
				t.Fatalf("checkpoint loaded=%v, want %v (batches scanned %d)", loaded, tc.loaded, s.RecoveredBatches)
			}
			if hot := e.HotSet(); tc.loaded != (len(hot) == 3) {
				t.Fatalf("hot set %v", hot)
			}
			ckptCheck(t, e, n, tc.ver, tc.removals)
			if err := e.ix.checkConsistency(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCheckpointReadOnce: the descriptor is cleared when a start loads
// it, so writes after that start followed by a crash are found by the
// scan, never hidden by the old checkpoint.
func TestCheckpointReadOnce(t *testing.T) {
	const n = 300
	dev := newMem(t, 16<<20)
	e := openT(t, dev, testOpts())
	ckptFill(t, e, n, 1, false)
	closeT(t, e)
	e = openT(t, dev, testOpts())
	if e.Stats().RecoveredBatches != 0 {
		t.Fatal("checkpoint not loaded")
	}
	ckptFill(t, e, n, 2, true)
	crashed := dev.CrashClone() // no Close: a crash
	closeT(t, e)
	e = openT(t, crashed, testOpts())
	defer closeT(t, e)
	if e.Stats().RecoveredBatches == 0 {
		t.Fatal("a start after a crash used a checkpoint")
	}
	ckptCheck(t, e, n, 2, true)
}

// TestCheckpointRoundTrip: decode(encode(c)) == c, and every truncation
// is refused.
func TestCheckpointRoundTrip(t *testing.T) {
	c := &checkpoint{instance: 7, maxSeq: 99, nextSeq: 5,
		regions: []ckptRegion{{seq: 3, tombs: 1}, {}, {seq: 4}},
		entries: []uint64{11, 12, 13, 14}, hot: []uint64{11, 13}}
	b := make([]byte, c.size())
	c.encode(b)
	got, err := decodeCheckpoint(b)
	if err != nil || fmt.Sprint(*got) != fmt.Sprint(*c) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for i := range len(b) {
		if _, err := decodeCheckpoint(b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
	}
	blk := make([]byte, 512)
	d := ckptDesc{instance: 7, length: 100, crc: 5, regions: []uint32{3, 9}}
	putDesc(blk, &d)
	got2, ok, err := parseDesc(blk)
	if !ok || err != nil || fmt.Sprint(got2) != fmt.Sprint(d) {
		t.Fatalf("descriptor round trip: %+v %v %v", got2, ok, err)
	}
}

// FuzzCheckpointDecode: the checkpoint and descriptor decoders never
// panic on bytes read back from a device, and whatever decodes encodes
// back to the same bytes.
func FuzzCheckpointDecode(f *testing.F) {
	c := &checkpoint{instance: 1, maxSeq: 2, nextSeq: 3, regions: []ckptRegion{{seq: 1}}, entries: []uint64{5, 6}, hot: []uint64{5}}
	b := make([]byte, c.size())
	c.encode(b)
	f.Add(b)
	blk := make([]byte, 512)
	putDesc(blk, &ckptDesc{instance: 1, length: 8, regions: []uint32{1}})
	f.Add(blk)
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := decodeCheckpoint(b); err == nil {
			out := make([]byte, c.size())
			c.encode(out)
			if !bytes.Equal(out, b[:len(out)]) {
				t.Fatal("re-encoding differs")
			}
		}
		if d, ok, err := parseDesc(b); ok && err == nil {
			out := make([]byte, len(b))
			putDesc(out, &d)
			n := ckptDescOff + ckptDescFixed + 4*len(d.regions)
			if !bytes.Equal(out[ckptDescOff:n], b[ckptDescOff:n]) {
				t.Fatal("descriptor re-encoding differs")
			}
		}
	})
}

// TestCheckpointMakesRoom: on a full device of small entries the clean
// regions cannot hold the checkpoint; Close reclaims the oldest regions
// to make room, and the next start loads it and serves right values.
func TestCheckpointMakesRoom(t *testing.T) {
	if raceEnabled {
		t.Skip("fills a device with 100k entries one by one: slow under -race, and single-goroutine")
	}
	defer func(v int) { ckptReclaimShare = v }(ckptReclaimShare)
	ckptReclaimShare = 4
	dev := newMem(t, 12<<20)
	o := testOpts()
	o.Flushers, o.CleanRegions, o.FlushDelay = 1, 1, time.Millisecond
	e := openT(t, dev, o)
	n := 0
	for ; e.Stats().Reclaims < 2; n++ {
		k := fmt.Appendf(nil, "k%d", n)
		for !e.Insert(k, mval(k, 1, 16), time.Time{}) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	settle(t, e)
	before := e.Stats().Reclaims
	closeT(t, e)
	if e.Stats().Reclaims == before {
		t.Fatal("close reclaimed nothing: the test did not need room")
	}
	e = openT(t, dev.CrashClone(), o)
	defer closeT(t, e)
	s := e.Stats()
	if s.RecoveredBatches != 0 || s.Recovered == 0 {
		t.Fatalf("checkpoint not loaded: %d entries, %d batches scanned", s.Recovered, s.RecoveredBatches)
	}
	hits := 0
	for i := range n {
		k := fmt.Appendf(nil, "k%d", i)
		if v, ok := e.Get(k, nil); ok {
			hits++
			if !bytes.Equal(v, mval(k, 1, 16)) {
				t.Fatalf("%s: wrong value", k)
			}
		}
	}
	if uint64(hits) != s.Recovered {
		t.Fatalf("%d hits of %d recovered entries", hits, s.Recovered)
	}
}

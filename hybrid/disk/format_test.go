package disk

import (
	"bytes"
	"errors"
	"testing"
)

func TestEntryRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name       string
		klen, vlen int
		h          entry
	}{
		{"empty", 0, 0, entry{hash: 1, seq: 2}},
		{"small", 3, 5, entry{hash: 7, seq: 9, expiry: 12345}},
		{"tombstone", 10, 0, entry{flags: entryFlagTomb, hash: 3, seq: 4}},
		{"aligned", 8, 16, entry{hash: ^uint64(0), seq: ^uint64(0), expiry: -1}},
		{"large", 300, 70000, entry{hash: 5, seq: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, val := bytes.Repeat([]byte{'k'}, tc.klen), bytes.Repeat([]byte{'v'}, tc.vlen)
			buf := bytes.Repeat([]byte{0xAA}, entrySize(tc.klen, tc.vlen)+16)
			n := encodeEntry(buf, &tc.h, key, val)
			if n%pack != 0 || n != entrySize(tc.klen, tc.vlen) {
				t.Fatalf("size %d", n)
			}
			h, k, v, err := decodeEntry(buf[:n])
			if err != nil {
				t.Fatal(err)
			}
			tc.h.keyLen, tc.h.valLen = tc.klen, tc.vlen
			if h != tc.h || !bytes.Equal(k, key) || !bytes.Equal(v, val) {
				t.Fatalf("got %+v", h)
			}
			covered := entryHeaderSize + tc.klen + tc.vlen // padding is not covered
			for i := 0; i < covered; i += 1 + covered/200 {
				c := bytes.Clone(buf[:n])
				c[i] ^= 0x10
				if _, _, _, err := decodeEntry(c); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("flip at %d not detected: %v", i, err)
				}
			}
		})
	}
}

func TestSuperblockRoundTrip(t *testing.T) {
	s := superblock{blockSize: 4096, regionSize: 1 << 24, regionCount: 7, bufferSize: 1 << 22,
		dataStart: 8192, instance: 99, created: 1234}
	b := make([]byte, superblockSize)
	putSuperblock(b, &s)
	got, err := parseSuperblock(b)
	if err != nil || got != s {
		t.Fatalf("got %+v, %v", got, err)
	}
	b[20] ^= 1
	if _, err := parseSuperblock(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flip: %v", err)
	}
	if _, err := parseSuperblock(make([]byte, superblockSize)); !errors.Is(err, errNoSuperblock) {
		t.Fatalf("zero: %v", err)
	}
}

func TestBatchRoundTrip(t *testing.T) {
	recs := []record{{hash: 1, seq: 2, expiry: 3, offset: 40, length: 48},
		{hash: 4, seq: 5, offset: 88, length: 40, tomb: true}}
	b := encodeTestBatch(recs)
	h, err := parseBatchHeader(b, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyBatch(b, b[h.recOff:h.length]); err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		r := getRecord(b[int(h.recOff)+i*indexRecordSize:])
		if r != recs[i] || checkRecord(&r, 0, &h) != nil {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	b[int(h.recOff)+3] ^= 4
	if err := verifyBatch(b, b[h.recOff:h.length]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flip: %v", err)
	}
}

// encodeTestBatch lays out a batch at offset 0 whose entry area ends at 128.
func encodeTestBatch(recs []record) []byte {
	recOff := 128
	b := make([]byte, recOff+len(recs)*indexRecordSize)
	for i := range recs {
		putRecord(b[recOff+i*indexRecordSize:], &recs[i])
	}
	h := batch{instance: 1, regionSeq: 2, length: uint32(len(b)), count: uint32(len(recs)), recOff: uint32(recOff)}
	putBatchHeader(b, &h, b[recOff:])
	return b
}

func FuzzDecodeEntry(f *testing.F) {
	buf := make([]byte, 128)
	n := encodeEntry(buf, &entry{hash: 1, seq: 2}, []byte("key"), []byte("value"))
	f.Add(buf[:n])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, k, v, err := decodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// A valid entry re-encodes to the same bytes.
		out := make([]byte, entrySize(len(k), len(v)))
		encodeEntry(out, &h, k, v)
		if !bytes.Equal(out[:entryHeaderSize+len(k)+len(v)], b[:entryHeaderSize+len(k)+len(v)]) {
			t.Fatal("re-encoding differs")
		}
	})
}

func FuzzParseSuperblock(f *testing.F) {
	b := make([]byte, superblockSize)
	putSuperblock(b, &superblock{blockSize: 512, regionSize: 1 << 20, regionCount: 3, instance: 5})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseSuperblock(b)
		if err != nil {
			return
		}
		out := make([]byte, superblockSize)
		putSuperblock(out, &s)
		if !bytes.Equal(out[:60], b[:60]) {
			t.Fatal("re-encoding differs")
		}
	})
}

func FuzzBatch(f *testing.F) {
	f.Add(encodeTestBatch([]record{{hash: 1, seq: 2, offset: 40, length: 48}}), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, start int64) {
		const rsz = 1 << 20
		start &= rsz - 1
		h, err := parseBatchHeader(b, start, rsz)
		if err != nil || int(h.length) > len(b) {
			return
		}
		if verifyBatch(b, b[h.recOff:h.length]) != nil {
			return
		}
		for i := range int(h.count) {
			r := getRecord(b[int(h.recOff)+i*indexRecordSize:])
			if checkRecord(&r, start, &h) == nil && (int64(r.offset) < start+batchHeaderSize ||
				int64(r.offset)+int64(r.length) > start+int64(h.recOff)) {
				t.Fatalf("accepted record outside batch: %+v", r)
			}
		}
	})
}

func TestRegionHeaderRoundTrip(t *testing.T) {
	want := regionHeader{instance: 0xfeed, seq: 42}
	b := make([]byte, regionHeaderSize)
	putRegionHeader(b, want)
	if got, err := parseRegionHeader(b); err != nil || got != want {
		t.Fatalf("got %+v, %v", got, err)
	}
	for i := range regionHeaderSize { // every byte is covered
		c := bytes.Clone(b)
		c[i] ^= 0x80
		if _, err := parseRegionHeader(c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: %v", i, err)
		}
	}
	if _, err := parseRegionHeader(make([]byte, regionHeaderSize)); !errors.Is(err, errNoRegionHeader) {
		t.Fatalf("zero: %v", err)
	}
	if _, err := parseRegionHeader(b[:regionHeaderSize-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short: %v", err)
	}
}

// FuzzRegionHeader: every input is a header (which re-encodes to the same
// bytes), an unused region (exactly when all bytes are zero), or damage
// (ErrCorrupt); never a panic.
func FuzzRegionHeader(f *testing.F) {
	b := make([]byte, regionHeaderSize)
	putRegionHeader(b, regionHeader{instance: 7, seq: 3})
	f.Add(b)
	f.Add(make([]byte, regionHeaderSize))
	f.Add([]byte("REGN"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseRegionHeader(b)
		zero := len(b) >= regionHeaderSize && bytes.Count(b[:regionHeaderSize], []byte{0}) == regionHeaderSize
		switch {
		case errors.Is(err, errNoRegionHeader) != zero:
			t.Fatalf("zero=%v, err %v", zero, err)
		case err != nil && !zero && !errors.Is(err, ErrCorrupt):
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		case err == nil:
			out := make([]byte, regionHeaderSize)
			putRegionHeader(out, h)
			if !bytes.Equal(out, b[:regionHeaderSize]) {
				t.Fatal("re-encoding differs")
			}
		}
	})
}

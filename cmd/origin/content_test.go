package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"testing"
)

// TestContentFormula pins the formula of content.go: e2e's copy and every
// stored expectation depend on it.
func TestContentFormula(t *testing.T) {
	seed := contentSeed("/obj/1k", 0, "")
	if seed != 0xac219b369e790c0c {
		t.Fatalf("seed = %#x", seed)
	}
	p := make([]byte, 16)
	fill(p, seed, 0)
	if got := hex.EncodeToString(p); got != "0574da1e9515752407b4df06ed59cd92" {
		t.Fatalf("first bytes = %s", got)
	}
	if contentSeed("/obj/1k", 1, "") == seed || contentSeed("/obj/1k", 0, "gzip") == seed || contentSeed("/obj/1k/a", 0, "") == seed {
		t.Fatal("version, variant and path must each change the seed")
	}
}

// TestFillOffsets: any split of an object into pieces, at any alignment,
// produces the same bytes as one fill.
func TestFillOffsets(t *testing.T) {
	const size = 1000
	seed := contentSeed("/obj/x", 3, "v")
	whole := make([]byte, size)
	fill(whole, seed, 0)
	for _, step := range []int{1, 3, 7, 8, 9, 64, 333} {
		got := make([]byte, size)
		for off := 0; off < size; off += step {
			end := min(off+step, size)
			fill(got[off:end], seed, int64(off))
		}
		if !bytes.Equal(got, whole) {
			t.Fatalf("step %d differs", step)
		}
	}
}

// TestBodyRead: a body of literal and generated segments reads the same
// through Read with tiny buffers and through WriteTo, and counts its bytes.
func TestBodyRead(t *testing.T) {
	seed := contentSeed("/obj/1k", 0, "")
	obj := make([]byte, 1024)
	fill(obj, seed, 0)
	mk := func(st *stats) *body {
		return &body{seed: seed, stats: st, segs: []segment{{lit: []byte("head"), off: 10, n: 5}, {off: 1000, n: 24}, {lit: []byte("tail")}}}
	}
	want := append(append(append([]byte("head"), obj[10:15]...), obj[1000:]...), "tail"...)
	st := newStats(1)
	b := mk(st)
	if b.Len() != int64(len(want)) {
		t.Fatalf("Len = %d, want %d", b.Len(), len(want))
	}
	var got []byte
	buf := make([]byte, 3)
	for {
		n, err := b.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
	}
	if !bytes.Equal(got, want) || st.bytes.Load() != uint64(len(want)) {
		t.Fatalf("Read: %q (counted %d), want %q", got, st.bytes.Load(), want)
	}
	var w bytes.Buffer
	if n, err := mk(st).WriteTo(&w); err != nil || n != int64(len(want)) || !bytes.Equal(w.Bytes(), want) {
		t.Fatalf("WriteTo: %d %v %q", n, err, w.Bytes())
	}
}

func BenchmarkFill(b *testing.B) {
	p := make([]byte, 64<<10)
	b.SetBytes(int64(len(p)))
	for i := 0; b.Loop(); i++ {
		fill(p, 42, int64(i)*int64(len(p)))
	}
}

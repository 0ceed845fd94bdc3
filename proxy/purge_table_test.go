package proxy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func hdrs(kv ...string) []headerKV {
	var h []headerKV
	for i := 0; i+1 < len(kv); i += 2 {
		h = append(h, headerKV{[]byte(kv[i]), []byte(kv[i+1])})
	}
	return h
}

func TestPurgeTable(t *testing.T) {
	p := newPurgeTable(2, 2, "")
	tagged := hdrs("Cache-Tag", "red, blue")
	plain := hdrs("Content-Type", "text/plain")
	key := []byte("http://a.example /img/x.png")
	check := func(name string, at int64, k []byte, h []headerKV, want bool) {
		t.Helper()
		if got := p.purged(at, k, h); got != want {
			t.Errorf("%s: purged(%d) = %v, want %v", name, at, got, want)
		}
	}
	check("empty table", 0, key, tagged, false)
	if err := p.addTags(100, []string{"blue"}); err != nil {
		t.Fatal(err)
	}
	check("older tagged", 100, key, tagged, true)
	check("newer tagged", 101, key, tagged, false)
	check("older untagged", 50, key, plain, false)
	if err := p.addPrefix(200, []byte("http://a.example /img/")); err != nil {
		t.Fatal(err)
	}
	check("prefix match", 150, key, plain, true)
	check("prefix other path", 150, []byte("http://a.example /css/x"), plain, false)
	check("prefix other host", 150, []byte("http://b.example /img/x"), plain, false)
	check("after prefix purge", 201, key, plain, false)
	// Two more tags: "blue" (t=100) folds into the tag floor.
	_ = p.addTags(300, []string{"green"})
	_ = p.addTags(400, []string{"white"})
	if len(p.tags) != 2 || p.tagFloor != 100 {
		t.Fatalf("tags %v floor %d", p.tags, p.tagFloor)
	}
	check("folded tag still purged", 100, key, hdrs("Surrogate-Key", "blue"), true)
	check("floor hides any tagged", 90, key, hdrs("Surrogate-Key", "other"), true)
	check("floor spares untagged", 90, []byte("http://c /"), plain, false)
	// Two more prefixes: the first folds into the prefix floor (all records).
	_ = p.addPrefix(500, []byte("http://b.example "))
	_ = p.addPrefix(600, []byte("http://c.example "))
	if len(p.prefixes) != 2 || p.prefixFloor != 200 {
		t.Fatalf("prefixes %d floor %d", len(p.prefixes), p.prefixFloor)
	}
	check("prefix floor hides everything older", 200, []byte("http://z /"), plain, true)
	check("latest skips all", 601, key, tagged, false)
}

func TestPurgeTableStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "purge.state")
	p := newPurgeTable(10, 10, path)
	if err := p.load(1); err != nil {
		t.Fatalf("load of a missing file: %v", err)
	}
	_ = p.addTags(10, []string{"a", "b"})
	if err := p.addPrefix(20, []byte("http://x /y")); err != nil {
		t.Fatal(err)
	}
	q := newPurgeTable(10, 10, path)
	if err := q.load(99); err != nil {
		t.Fatal(err)
	}
	if q.tags["a"] != 10 || q.tags["b"] != 10 || len(q.prefixes) != 1 || q.latest.Load() != 20 {
		t.Fatalf("reloaded %+v latest %d", q.tags, q.latest.Load())
	}
	if !q.purged(15, []byte("http://x /y/z"), nil) || q.purged(21, []byte("http://x /y/z"), nil) {
		t.Error("reloaded prefix purge")
	}
	// Smaller bounds on reload fold the excess.
	r := newPurgeTable(1, 1, path)
	if err := r.load(99); err != nil || len(r.tags) != 1 || r.tagFloor != 10 {
		t.Fatalf("reload with max 1: %v %v floor %d", err, r.tags, r.tagFloor)
	}
	// A damaged file hides everything stored before the load.
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c := newPurgeTable(10, 10, path)
	if err := c.load(1000); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("load of a damaged file: %v", err)
	}
	if !c.purged(1000, []byte("http://any /"), nil) || c.purged(1001, []byte("http://any /"), nil) {
		t.Error("damaged state did not hide older records")
	}
	if entries, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".purge-*")); len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestPurgeTableSaveError(t *testing.T) {
	p := newPurgeTable(10, 10, filepath.Join(t.TempDir(), "missing-dir", "state"))
	if err := p.addTags(5, []string{"a"}); err == nil {
		t.Fatal("save into a missing directory succeeded")
	}
	if !p.purged(5, nil, hdrs("Cache-Tag", "a")) {
		t.Error("a purge that could not be saved does not hold in memory")
	}
}

func FuzzDecodePurgeState(f *testing.F) {
	p := newPurgeTable(4, 4, "")
	_ = p.addTags(7, []string{"t1", "t2"})
	_ = p.addPrefix(8, []byte("http://h /p"))
	f.Add(p.encode(nil))
	f.Add([]byte("STPG"))
	f.Fuzz(func(t *testing.T, b []byte) {
		q := newPurgeTable(4, 4, "")
		if q.decode(b) != nil {
			if len(q.tags) != 0 || len(q.prefixes) != 0 {
				t.Fatal("failed decode left entries")
			}
			return
		}
		if len(q.tags) > 4 || len(q.prefixes) > 4 {
			t.Fatalf("decode passed the bounds: %d tags %d prefixes", len(q.tags), len(q.prefixes))
		}
		r := newPurgeTable(4, 4, "")
		if err := r.decode(q.encode(nil)); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func TestPurgedAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not measured under -race")
	}
	p := newPurgeTable(10, 10, "")
	_ = p.addTags(100, []string{"blue"})
	_ = p.addPrefix(100, []byte("http://a /x"))
	h := hdrs("Surrogate-Key", "red green", "Cache-Tag", "blue")
	key := []byte("http://a /y")
	for _, at := range []int64{50, 200} {
		if n := testing.AllocsPerRun(100, func() { p.purged(at, key, h) }); n != 0 {
			t.Errorf("purged(%d) allocates %v", at, n)
		}
	}
}

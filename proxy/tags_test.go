package proxy

import (
	"strings"
	"testing"

	"strata/proxy/internal/httpcache"
)

func tagsOf(h ...string) []string {
	var kvs []headerKV
	for i := 0; i+1 < len(h); i += 2 {
		kvs = append(kvs, headerKV{[]byte(h[i]), []byte(h[i+1])})
	}
	var out []string
	forEachTag(kvs, func(t []byte) bool { out = append(out, string(t)); return true })
	return out
}

func TestForEachTag(t *testing.T) {
	long := strings.Repeat("x", maxTagLen)
	many := strings.TrimSpace(strings.Repeat("t ", maxTagsPerObject+5))
	for _, tc := range []struct {
		name string
		h    []string
		want string
	}{
		{"surrogate spaces", []string{"Surrogate-Key", "a b  c\td"}, "a|b|c|d"},
		{"cache-tag commas", []string{"Cache-Tag", "x, y ,z,,"}, "x|y|z"},
		{"both and repeated", []string{"Cache-Tag", "p", "Surrogate-Key", "q", "surrogate-key", "r"}, "p|q|r"},
		{"other headers ignored", []string{"X-Tag", "no", "Content-Type", "text/plain"}, ""},
		{"bad bytes dropped", []string{"Surrogate-Key", "ok caf\xc3\xa9 a\x01b end"}, "ok|end"},
		{"comma inside surrogate key: not a tag", []string{"Surrogate-Key", "a,b c"}, "c"},
		{"length limit", []string{"Surrogate-Key", long + " " + long + "y z"}, long + "|z"},
		{"empty", []string{"Surrogate-Key", "   "}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(tagsOf(tc.h...), "|"); got != tc.want {
				t.Errorf("tags %q, want %q", got, tc.want)
			}
		})
	}
	if n := len(tagsOf("Surrogate-Key", many, "Cache-Tag", "late")); n != maxTagsPerObject {
		t.Errorf("%d tags read, want the first %d", n, maxTagsPerObject)
	}
}

func FuzzForEachTag(f *testing.F) {
	f.Add("a b c", "x, y")
	f.Add("\x00\xff ,", ",,,")
	f.Fuzz(func(t *testing.T, sk, ct string) {
		n := 0
		forEachTag([]headerKV{{httpcache.HeaderSurrogateKey, []byte(sk)}, {httpcache.HeaderCacheTag, []byte(ct)}}, func(tag []byte) bool {
			n++
			if !validTag(tag) {
				t.Fatalf("invalid tag %q", tag)
			}
			return true
		})
		if n > maxTagsPerObject {
			t.Fatalf("%d tags", n)
		}
	})
}

func TestTagIndexBounds(t *testing.T) {
	x := newTagIndex(10 * (tagEntryOverhead + 8))
	h := []headerKV{{httpcache.HeaderSurrogateKey, []byte("t1 t2")}}
	x.record([]byte("key1"), h)
	x.record([]byte("key1"), h) // deduplicated
	x.record([]byte("key2"), h)
	if x.bytes != 4*(tagEntryOverhead+6) || x.resets != 0 {
		t.Fatalf("bytes %d resets %d", x.bytes, x.resets)
	}
	if got := x.take("t1"); len(got) != 2 {
		t.Fatalf("take t1 = %q", got)
	}
	if got := x.take("t1"); len(got) != 0 {
		t.Fatalf("take t1 again = %q", got)
	}
	for i := range 20 {
		x.record([]byte{'k', byte('a' + i), 'x', 'x'}, h)
		if x.bytes > x.max {
			t.Fatalf("index holds %d bytes, cap %d", x.bytes, x.max)
		}
	}
	if x.resets == 0 {
		t.Fatal("the index never reset past its cap")
	}
	if got := x.take("t2"); len(got) == 0 || len(got) > 5 {
		t.Fatalf("after resets take t2 = %q", got)
	}
	off := newTagIndex(-1)
	off.record([]byte("k"), h)
	if len(off.m) != 0 {
		t.Fatal("disabled index recorded")
	}
}

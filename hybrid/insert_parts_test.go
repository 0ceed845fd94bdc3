package hybrid

import (
	"bytes"
	"testing"
	"time"
)

// TestInsertParts: a value given in parts reads back as their
// concatenation, from memory and, when too big for it or written on
// insertion, from disk.
func TestInsertParts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy WritePolicy
		body   int
		tier   Tier
	}{
		{"memory", WriteOnEviction, 8 << 10, TierMemory},
		{"too big for memory", WriteOnEviction, 100 << 10, TierDisk},
		{"written on insertion", WriteOnInsertion, 8 << 10, TierMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := testCache(t, 64<<10, func(o *Options) { o.WritePolicy = tc.policy })
			head, body, tail := []byte("head|"), bytes.Repeat([]byte("b"), tc.body), []byte("|tail")
			want := append(append(append([]byte(nil), head...), body...), tail...)
			c.InsertParts([]byte("k"), head, body, tail, time.Time{})
			if v, tier, ok := c.Get([]byte("k"), nil); !ok || tier != tc.tier || !bytes.Equal(v, want) {
				t.Fatalf("ok=%v tier=%v, %d bytes", ok, tier, len(v))
			}
			if tc.policy != WriteOnInsertion {
				return
			}
			c.mem.Delete([]byte("k"))
			if v, tier, ok := c.Get([]byte("k"), nil); !ok || tier != TierDisk || !bytes.Equal(v, want) {
				t.Fatalf("disk copy: ok=%v tier=%v, %d bytes", ok, tier, len(v))
			}
		})
	}
}

package hybrid

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCachePromotion: which disk hit of a key is the first served from
// memory, per policy (0: never).
func TestCachePromotion(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mutate    func(*Options)
		memoryHit int // 1-based Get that first answers from memory
	}{
		{"default", func(*Options) {}, 3},
		{"second-hit", func(o *Options) { o.Promotion = PromoteSecondHit }, 3},
		{"first-hit", func(o *Options) { o.Promotion = PromoteFirstHit }, 2},
		{"never", func(o *Options) { o.Promotion = PromoteNever }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := testCache(t, 64<<10, tc.mutate)
			val := bytes.Repeat([]byte("v"), 1000)
			c.Insert([]byte("k0"), val, time.Time{})
			for i := 1; i < 200; i++ { // evict k0 to disk
				c.Insert(fmt.Appendf(nil, "k%d", i), val, time.Time{})
			}
			first := 0
			for i := 1; i <= 4; i++ {
				v, tier, ok := c.Get([]byte("k0"), nil)
				if !ok || !bytes.Equal(v, val) {
					t.Fatalf("get %d: ok=%v", i, ok)
				}
				if tier == TierMemory && first == 0 {
					first = i
				}
			}
			if first != tc.memoryHit {
				t.Fatalf("first memory hit at get %d, want %d (stats %+v)", first, tc.memoryHit, c.Stats())
			}
			if got, want := c.Stats().Promotions > 0, tc.memoryHit > 0; got != want {
				t.Fatalf("promotions %d", c.Stats().Promotions)
			}
		})
	}
}

func TestPromoteFilter(t *testing.T) {
	f := newPromoteFilter(0)
	if len(f.slots) != promoteMinSlots {
		t.Fatalf("%d slots", len(f.slots))
	}
	if g := newPromoteFilter(1 << 40); len(g.slots) != promoteMaxSlots {
		t.Fatalf("%d slots", len(g.slots))
	}
	if g := newPromoteFilter(100 * promoteSlotBytes * 16); len(g.slots) != 2048 {
		t.Fatalf("%d slots, want 1600 rounded up", len(g.slots))
	}
	h := uint64(0xdeadbeef12345678)
	if f.second(h, 1) || !f.second(h, 1) {
		t.Fatal("second hit not reported")
	}
	if f.second(h, 1) {
		t.Fatal("third hit right after a promotion reported again")
	}
	// A colliding hash (same slot, other key) evicts h's mark and is never
	// taken for h: the slot holds whole hashes.
	other := h ^ 0xff
	if f.second(other, 1) || f.second(h, 1) || f.second(other, 1) {
		t.Fatal("collision reported as a second hit")
	}
	// Hash 0 and 1 share tag 1: at worst a spurious promotion, never a panic.
	_ = f.second(0, 1)
	_ = f.second(1, 1)
}

// TestPromoteFilterSized: a large value's second hit must come within as
// many large hits as memory holds such values: two 64 KiB values whose
// hashes share the top 10 bits (not 12) take one slot of a 4096-slot
// table between them, so one's hit makes the other's next hit a first
// again; small values keep a slot each.
func TestPromoteFilterSized(t *testing.T) {
	f := newPromoteFilter(4096 * promoteSlotBytes)
	a, b := uint64(0xabc)<<52, uint64(0xabd)<<52 // top 10 bits equal
	for _, tc := range []struct {
		size int
		want bool
	}{{64 << 10, false}, {promoteSlotBytes, true}, {1000, true}} {
		_ = f.second(a, tc.size)
		_ = f.second(b, tc.size)
		if got := f.second(a, tc.size); got != tc.want {
			t.Errorf("size %d: second hit of a after b's = %v, want %v", tc.size, got, tc.want)
		}
		clear(f.slots)
	}
	if got := f.narrow(1 << 30); got != 2 { // 4096 slots down to 1024, no fewer
		t.Errorf("narrow(1GiB) = %d, want 2", got)
	}
}

func TestPromotionOptions(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want Promotion
		err  string
	}{
		{Options{}, PromoteSecondHit, ""},
		{Options{Promotion: PromoteFirstHit}, PromoteFirstHit, ""},
		{Options{Promotion: "sometimes"}, "sometimes", "promotion"},
	} {
		tc.o.EnsureDefaults()
		err := tc.o.Validate()
		if tc.o.Promotion != tc.want || (err == nil) != (tc.err == "") ||
			(err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v: promotion %q, err %v", tc, tc.o.Promotion, err)
		}
	}
}

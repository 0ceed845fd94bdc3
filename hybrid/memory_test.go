package hybrid

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMemoryOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    MemoryOptions
		errs []string // substrings, one per expected problem; none: valid
	}{
		{name: "zero is valid", o: MemoryOptions{}},
		{name: "lru", o: MemoryOptions{Policy: MemoryLRU, Capacity: 1 << 20, Shards: 4}},
		{name: "fifo", o: MemoryOptions{Policy: MemoryFIFO, Capacity: 1 << 20, Shards: 1, BlockSize: 64}},
		{name: "all bad", o: MemoryOptions{Policy: "arc", Capacity: -1, Shards: 3, BlockSize: 100},
			errs: []string{`policy "arc"`, "shards 3", "block_size 100", "capacity -1"}},
		{name: "shard too small", o: MemoryOptions{Capacity: 8 << 10, Shards: 4},
			errs: []string{"per shard"}},
		{name: "too many shards", o: MemoryOptions{Capacity: 1 << 40, Shards: 1 << 17},
			errs: []string{"shards 131072"}},
		{name: "blocks too big", o: MemoryOptions{Capacity: 8 << 10, Shards: 1, BlockSize: 128 << 10},
			errs: []string{"block_size 131072", "per shard"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			err := o.EnsureDefaults().Validate()
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := NewMemory(tc.o); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidMemoryOptions) {
				t.Fatalf("err %v, want ErrInvalidMemoryOptions", err)
			}
			if got := len(strings.Split(err.Error(), "\n")); got != len(tc.errs) {
				t.Errorf("%d problems reported, want %d: %v", got, len(tc.errs), err)
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: missing %q", err, want)
				}
			}
			if _, err := NewMemory(tc.o); err == nil {
				t.Error("NewMemory accepted invalid options")
			}
		})
	}
}

func TestMemoryDefaultShards(t *testing.T) {
	for _, tc := range []struct {
		capacity   int64
		procs, out int
	}{
		{1 << 30, 2, 8}, {1 << 30, 3, 16}, {1 << 30, 64, 256},
		{64 << 20, 64, 16}, {8 << 20, 2, 2}, {1 << 20, 2, 1},
	} {
		if got := memDefaultShards(tc.capacity, tc.procs); got != tc.out {
			t.Errorf("memDefaultShards(%d, %d) = %d, want %d", tc.capacity, tc.procs, got, tc.out)
		}
	}
}

// memKeys returns n keys named prefix0, prefix1, …
func memKeys(prefix string, n int) [][]byte {
	ks := make([][]byte, n)
	for i := range ks {
		ks[i] = fmt.Appendf(nil, "%s%d", prefix, i)
	}
	return ks
}

// memPolicyStep is one operation of a policy scenario.
type memPolicyStep struct {
	op   byte // 's' set, 'g' get
	keys [][]byte
}

func memSet(keys ...[][]byte) memPolicyStep { return memPolicyStep{'s', concatKeys(keys)} }
func memGet(keys ...[][]byte) memPolicyStep { return memPolicyStep{'g', concatKeys(keys)} }
func concatKeys(ks [][][]byte) [][]byte {
	var out [][]byte
	for _, k := range ks {
		out = append(out, k...)
	}
	return out
}

// TestMemoryPolicies runs scenarios on a one-shard tier that holds exactly
// 16 entries of the test's size and checks which keys were evicted, in
// which order, and where survivors sit.
func TestMemoryPolicies(t *testing.T) {
	hot, cold, fill := memKeys("h", 8), memKeys("c", 40), memKeys("f", 16)
	one := func(k string) [][]byte { return [][]byte{[]byte(k)} }
	for _, tc := range []struct {
		name    string
		policy  MemoryPolicy
		steps   []memPolicyStep
		evicted [][]byte // exact eviction order
		queues  map[string]int
	}{
		{
			name:   "s3fifo one-hit wonders leave from small, re-accessed keys reach main",
			policy: MemoryS3FIFO,
			steps:  []memPolicyStep{memSet(hot), memGet(hot), memSet(cold)},
			// The hot keys move to main on the first eviction; every
			// eviction after that takes the oldest cold key.
			evicted: cold[:32],
			queues:  map[string]int{"h0": memQMain, "h7": memQMain, "c39": memQSmall, "c0": -1},
		},
		{
			name:   "s3fifo ghost hit goes straight to main",
			policy: MemoryS3FIFO,
			steps:  []memPolicyStep{memSet(fill), memSet(one("x")), memSet(one("f0")), memSet(one("y"))},
			// x evicts f0 (no hit) into the ghost; f0 set again enters
			// main (evicting small's tail f1 to make room); y evicts f2.
			evicted: [][]byte{[]byte("f0"), []byte("f1"), []byte("f2")},
			queues:  map[string]int{"f0": memQMain, "x": memQSmall, "y": memQSmall},
		},
		{
			name:   "s3fifo main reinserts entries hit since they last passed",
			policy: MemoryS3FIFO,
			steps: []memPolicyStep{memSet(fill), memGet(fill), memSet(one("x")),
				memGet(one("f1"), one("x")), memSet(one("f0"))},
			// x moves f0..f15 to main with their hit counts reset, then
			// evicts main's tail f0. Setting f0 again first empties small
			// (x was hit: it joins main), then evicts from main: f1 was
			// hit again, so it goes round once more and f2 leaves instead.
			evicted: [][]byte{[]byte("f0"), []byte("f2")},
			queues:  map[string]int{"f1": memQMain, "f3": memQMain, "x": memQMain, "f0": memQSmall},
		},
		{
			name:    "lru evicts the least recently used",
			policy:  MemoryLRU,
			steps:   []memPolicyStep{memSet(fill), memGet(fill[:1]), memSet(one("x")), memSet(one("y"))},
			evicted: [][]byte{[]byte("f1"), []byte("f2")},
			queues:  map[string]int{"f0": memQMain, "y": memQMain},
		},
		{
			name:    "fifo evicts in insertion order whatever the hits",
			policy:  MemoryFIFO,
			steps:   []memPolicyStep{memSet(fill), memGet(fill[:1]), memSet(one("x")), memSet(one("y"))},
			evicted: [][]byte{[]byte("f0"), []byte("f1")},
			queues:  map[string]int{"f0": -1, "f2": memQMain},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var evicted [][]byte
			m := newMemory16(t, tc.policy, func(ev Evicted) {
				evicted = append(evicted, bytes.Clone(ev.Key))
			})
			value := make([]byte, 100)
			for _, st := range tc.steps {
				for _, k := range st.keys {
					if st.op == 's' && !m.Set(k, value, time.Time{}) {
						t.Fatalf("Set(%s) refused", k)
					}
					if st.op == 'g' {
						if _, _, ok := m.Get(k, nil); !ok {
							t.Fatalf("Get(%s) missed", k)
						}
					}
					if err := m.memCheck(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got, want := fmt.Sprintf("%s", evicted), fmt.Sprintf("%s", tc.evicted); got != want {
				t.Errorf("evicted %s\nwant    %s", got, want)
			}
			for k, want := range tc.queues {
				if got := m.memQueueOf([]byte(k)); got != want {
					t.Errorf("%s in queue %d, want %d", k, got, want)
				}
			}
		})
	}
}

// newMemory16 returns a one-shard tier that holds exactly 16 entries of a
// 2-3 byte key and a 100-byte value (2 blocks of 64).
func newMemory16(t *testing.T, p MemoryPolicy, onEvict func(Evicted)) *Memory {
	t.Helper()
	charge := int64(2*(64+4) + memEntryOverhead)
	return newTestMemory(t, MemoryOptions{Policy: p, Shards: 1, BlockSize: 64,
		Capacity: 17*charge - 1, OnEvict: onEvict}, ^uint64(0))
}

package memory

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		errs []string // substrings, one per expected problem; none: valid
	}{
		{name: "zero is valid", o: Options{}},
		{name: "lru", o: Options{Policy: LRU, Capacity: 1 << 20, Shards: 4}},
		{name: "fifo", o: Options{Policy: FIFO, Capacity: 1 << 20, Shards: 1, BlockSize: 64}},
		{name: "all bad", o: Options{Policy: "arc", Capacity: -1, Shards: 3, BlockSize: 100},
			errs: []string{`policy "arc"`, "shards 3", "block_size 100", "capacity -1"}},
		{name: "shard too small", o: Options{Capacity: 8 << 10, Shards: 4},
			errs: []string{"per shard"}},
		{name: "too many shards", o: Options{Capacity: 1 << 40, Shards: 1 << 17},
			errs: []string{"shards 131072"}},
		{name: "blocks too big", o: Options{Capacity: 8 << 10, Shards: 1, BlockSize: 128 << 10},
			errs: []string{"block_size 131072", "per shard"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			err := o.EnsureDefaults().Validate()
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := New(tc.o); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("err %v, want ErrInvalidOptions", err)
			}
			if got := len(strings.Split(err.Error(), "\n")); got != len(tc.errs) {
				t.Errorf("%d problems reported, want %d: %v", got, len(tc.errs), err)
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: missing %q", err, want)
				}
			}
			if _, err := New(tc.o); err == nil {
				t.Error("New accepted invalid options")
			}
		})
	}
}

func TestDefaultShards(t *testing.T) {
	for _, tc := range []struct {
		capacity   int64
		procs, out int
	}{
		{1 << 30, 2, 8}, {1 << 30, 3, 16}, {1 << 30, 64, 256},
		{64 << 20, 64, 16}, {8 << 20, 2, 2}, {1 << 20, 2, 1},
	} {
		if got := defaultShards(tc.capacity, tc.procs); got != tc.out {
			t.Errorf("defaultShards(%d, %d) = %d, want %d", tc.capacity, tc.procs, got, tc.out)
		}
	}
}

// testKeys returns n keys named prefix0, prefix1, …
func testKeys(prefix string, n int) [][]byte {
	ks := make([][]byte, n)
	for i := range ks {
		ks[i] = fmt.Appendf(nil, "%s%d", prefix, i)
	}
	return ks
}

// policyStep is one operation of a policy scenario.
type policyStep struct {
	op   byte // 's' set, 'g' get
	keys [][]byte
}

func testSet(keys ...[][]byte) policyStep { return policyStep{'s', concatKeys(keys)} }
func testGet(keys ...[][]byte) policyStep { return policyStep{'g', concatKeys(keys)} }
func concatKeys(ks [][][]byte) [][]byte {
	var out [][]byte
	for _, k := range ks {
		out = append(out, k...)
	}
	return out
}

// TestPolicies runs scenarios on a one-shard tier that holds exactly
// 16 entries of the test's size and checks which keys were evicted, in
// which order, and where survivors sit.
func TestPolicies(t *testing.T) {
	hot, cold, fill := testKeys("h", 8), testKeys("c", 40), testKeys("f", 16)
	one := func(k string) [][]byte { return [][]byte{[]byte(k)} }
	for _, tc := range []struct {
		name    string
		policy  Policy
		steps   []policyStep
		evicted [][]byte // exact eviction order
		queues  map[string]int
	}{
		{
			name:   "s3fifo one-hit wonders leave from small, re-accessed keys reach main",
			policy: S3FIFO,
			steps:  []policyStep{testSet(hot), testGet(hot), testSet(cold)},
			// The hot keys move to main on the first eviction; every
			// eviction after that takes the oldest cold key.
			evicted: cold[:32],
			queues:  map[string]int{"h0": qMain, "h7": qMain, "c39": qSmall, "c0": -1},
		},
		{
			name:   "s3fifo ghost hit goes straight to main",
			policy: S3FIFO,
			steps:  []policyStep{testSet(fill), testSet(one("x")), testSet(one("f0")), testSet(one("y"))},
			// x evicts f0 (no hit) into the ghost; f0 set again enters
			// main (evicting small's tail f1 to make room); y evicts f2.
			evicted: [][]byte{[]byte("f0"), []byte("f1"), []byte("f2")},
			queues:  map[string]int{"f0": qMain, "x": qSmall, "y": qSmall},
		},
		{
			name:   "s3fifo main reinserts entries hit since they last passed",
			policy: S3FIFO,
			steps: []policyStep{testSet(fill), testGet(fill), testSet(one("x")),
				testGet(one("f1"), one("x")), testSet(one("f0"))},
			// x moves f0..f15 to main with their hit counts reset, then
			// evicts main's tail f0. Setting f0 again first empties small
			// (x was hit: it joins main), then evicts from main: f1 was
			// hit again, so it goes round once more and f2 leaves instead.
			evicted: [][]byte{[]byte("f0"), []byte("f2")},
			queues:  map[string]int{"f1": qMain, "f3": qMain, "x": qMain, "f0": qSmall},
		},
		{
			name:    "lru evicts the least recently used",
			policy:  LRU,
			steps:   []policyStep{testSet(fill), testGet(fill[:1]), testSet(one("x")), testSet(one("y"))},
			evicted: [][]byte{[]byte("f1"), []byte("f2")},
			queues:  map[string]int{"f0": qMain, "y": qMain},
		},
		{
			name:    "fifo evicts in insertion order whatever the hits",
			policy:  FIFO,
			steps:   []policyStep{testSet(fill), testGet(fill[:1]), testSet(one("x")), testSet(one("y"))},
			evicted: [][]byte{[]byte("f0"), []byte("f1")},
			queues:  map[string]int{"f0": -1, "f2": qMain},
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
					if err := m.check(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got, want := fmt.Sprintf("%s", evicted), fmt.Sprintf("%s", tc.evicted); got != want {
				t.Errorf("evicted %s\nwant    %s", got, want)
			}
			for k, want := range tc.queues {
				if got := m.queueOf([]byte(k)); got != want {
					t.Errorf("%s in queue %d, want %d", k, got, want)
				}
			}
		})
	}
}

// newMemory16 returns a one-shard tier that holds exactly 16 entries of a
// 2-3 byte key and a 100-byte value (2 blocks of 64).
func newMemory16(t *testing.T, p Policy, onEvict func(Evicted)) *Cache {
	t.Helper()
	charge := int64(2*(64+4) + entryOverhead)
	return newTestCache(t, Options{Policy: p, Shards: 1, BlockSize: 64,
		Capacity: 17*charge - 1, OnEvict: onEvict}, ^uint64(0))
}

// TestContainsExpired: an expired entry is not contained.
func TestContainsExpired(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Unix(1000, 0).UnixNano())
	m, err := New(Options{Capacity: 1 << 20, Shards: 1, Now: now.Load})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Set([]byte("k"), []byte("v"), time.Unix(1001, 0))
	if !m.Contains([]byte("k")) {
		t.Fatal("live entry not contained")
	}
	now.Store(time.Unix(1002, 0).UnixNano())
	if m.Contains([]byte("k")) {
		t.Fatal("expired entry contained")
	}
}

package memory

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// modelValue encodes (key, version) with a checksum, so any reader can
// tell a value that belongs to key from torn or foreign bytes.
func modelValue(key []byte, version uint64, size int) []byte {
	v := make([]byte, 12, 12+len(key)+size)
	binary.LittleEndian.PutUint64(v[4:], version)
	v = append(v, key...)
	for i := 0; i < size; i++ {
		v = append(v, byte(version)+byte(i))
	}
	binary.LittleEndian.PutUint32(v, crc32.ChecksumIEEE(v[4:]))
	return v
}

func modelCheck(key, v []byte) (version uint64, err error) {
	if len(v) < 12+len(key) || binary.LittleEndian.Uint32(v) != crc32.ChecksumIEEE(v[4:]) ||
		!bytes.Equal(v[12:12+len(key)], key) {
		return 0, fmt.Errorf("key %q: foreign or torn value %.40q", key, v)
	}
	return binary.LittleEndian.Uint64(v[4:]), nil
}

// TestModel runs goroutines side by side on a small tier (constant
// eviction, some forced hash collisions). Each goroutine owns some keys and
// keeps a plain map beside the cache: a hit on an owned key must return
// the version last set. Keys shared by all goroutines must return a value
// that belongs to them. Invariants are checked at the end.
func TestModel(t *testing.T) {
	for _, tc := range []struct {
		p     Policy
		split bool // every Set copies outside the lock (set.go)
	}{{S3FIFO, false}, {LRU, false}, {FIFO, false}, {S3FIFO, true}, {LRU, true}} {
		t.Run(fmt.Sprintf("%s/split=%v", tc.p, tc.split), func(t *testing.T) {
			m := newTestCache(t, Options{Policy: tc.p, Capacity: 256 << 10, Shards: 8, BlockSize: 64},
				0xff|0xff<<56) // 16 hash bits: collisions happen
			if tc.split {
				m.cfg.splitMin = 0
			}
			m.cfg.lendMin = 1000 // about half the values are lent
			const workers, ops = 8, 4000
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- modelWorker(m, w, ops)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
			if st := m.Stats(); st.Hits == 0 || st.Evictions == 0 || st.Lent != 0 {
				t.Fatalf("test did not exercise hits and evictions, or left bytes lent: %+v", st)
			}
			if n := m.pinned(); n != 0 {
				t.Fatalf("%d pin words left nonzero after every Value was released", n)
			}
		})
	}
}

func modelWorker(m *Cache, w, ops int) error {
	r := rand.New(rand.NewPCG(uint64(w), 7))
	model := map[string]uint64{} // owned key → last version set; absent: deleted/never
	var dst []byte
	held := newHeldValues()
	defer held.releaseAll()
	for i := range ops {
		shared := r.IntN(4) == 0
		var key []byte
		if shared {
			key = fmt.Appendf(nil, "shared-%d", r.IntN(50))
		} else {
			key = fmt.Appendf(nil, "w%d-%d", w, r.IntN(200))
		}
		switch op := r.IntN(12); {
		case op >= 10:
			if err := held.lend(m, key, shared, model); err != nil {
				return err
			}
		case op < 5:
			v, _, ok := m.Get(key, dst[:0])
			dst = v
			if !ok {
				continue
			}
			ver, err := modelCheck(key, v)
			if err != nil {
				return err
			}
			if want, owned := model[string(key)]; !shared && (!owned || ver != want) {
				return fmt.Errorf("%s: version %d, model %d (%v)", key, ver, want, owned)
			}
		case op < 9:
			ver := uint64(i + 1)
			if m.Set(key, modelValue(key, ver, r.IntN(2000)), time.Time{}) && !shared {
				model[string(key)] = ver
			} else if !shared {
				delete(model, string(key))
			}
		default:
			if m.Delete(key) && !shared {
				if _, ok := model[string(key)]; !ok {
					return fmt.Errorf("%s: Delete removed a key the model lacks", key)
				}
			}
			delete(model, string(key))
		}
	}
	return nil
}

// FuzzOps decodes op sequences (3 bytes each: op, key, size) and runs
// them on a tiny tier beside a map, checking the invariants after each op
// and that every evicted entry is the model's (keys of up to 130 bytes, so
// that keys span blocks).
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 10, 1, 1, 0, 2, 1, 0, 1, 1, 0})
	f.Add(bytes.Repeat([]byte{0, 3, 200, 0, 4, 255, 1, 3, 0}, 30))
	f.Add([]byte{0x80, 0, 0, 0, 1, 0, 1, 0, 0, 2, 1, 0})
	f.Add(bytes.Repeat([]byte{0x41, 3, 200, 0, 4, 255, 1, 3, 0}, 30))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		policies := []Policy{S3FIFO, LRU, FIFO}
		mask := ^uint64(0)
		if data[0]&0x80 != 0 {
			mask = 3 // four hashes for all keys: collisions everywhere
		}
		model := map[string][]byte{}
		var evictErr error
		onEvict := func(ev Evicted) {
			if want, in := model[string(ev.Key)]; evictErr == nil && (!in || !bytes.Equal(ev.AppendValue(nil), want)) {
				evictErr = fmt.Errorf("evicted %q = %q, model %q (%v)", ev.Key, ev.AppendValue(nil), want, in)
			}
			delete(model, string(ev.Key))
		}
		m := newTestCache(t, Options{Policy: policies[int(data[0]&3)%3], Capacity: 8 << 10,
			Shards: 1, BlockSize: 64, OnEvict: onEvict}, mask)
		if data[0]&0x40 != 0 {
			m.cfg.splitMin = 0 // every Set in three steps (set.go)
		}
		for data = data[1:]; len(data) >= 3; data = data[3:] {
			key := fmt.Appendf(nil, "k%d%s", data[1]%32, bytes.Repeat([]byte("x"), int(data[1]>>5)*18))
			if err := fuzzStep(m, model, data[0]%3, key, int(data[2])*8); err != nil {
				t.Fatal(err)
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
			if evictErr != nil {
				t.Fatal(evictErr)
			}
		}
	})
}

func fuzzStep(m *Cache, model map[string][]byte, op byte, key []byte, size int) error {
	switch op {
	case 0:
		value := bytes.Repeat(key, size/len(key)+1)[:size]
		delete(model, string(key))
		if m.Set(key, value, time.Time{}) {
			model[string(key)] = value
		}
	case 1:
		v, _, ok := m.Get(key, nil)
		if want, in := model[string(key)]; ok && (!in || !bytes.Equal(v, want)) {
			return fmt.Errorf("Get(%s) = %q, model %q (%v)", key, v, want, in)
		}
	default:
		_, in := model[string(key)]
		if m.Delete(key) && !in {
			return fmt.Errorf("Delete(%s) removed what the model lacks", key)
		}
		delete(model, string(key))
		if _, _, ok := m.Get(key, nil); ok {
			return fmt.Errorf("Get(%s) hit after Delete", key)
		}
	}
	return nil
}

package memory

import (
	"fmt"
	"testing"
	"time"
)

// TestHottest: entries read since they were set come first, then the
// rest newest first; clean entries say so; expired and deleted ones are
// skipped; fn's false stops the walk.
func TestHottest(t *testing.T) {
	for _, policy := range []Policy{S3FIFO, LRU, FIFO} {
		t.Run(string(policy), func(t *testing.T) {
			now := int64(1000)
			m, err := New(Options{Capacity: 1 << 20, Shards: 1, Policy: policy, Now: func() int64 { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for i := range 10 {
				m.Set(fmt.Appendf(nil, "k%d", i), []byte("v"), time.Time{})
			}
			m.SetClean([]byte("clean"), []byte("v"), time.Time{})
			m.Set([]byte("expired"), []byte("v"), time.Unix(0, 2000))
			m.Delete([]byte("k5"))
			m.Get([]byte("k2"), nil)
			now = 3000
			var got []string
			cleanSeen := false
			m.Hottest(func(ev Evicted, clean bool) bool {
				got = append(got, string(ev.Key))
				if clean != (string(ev.Key) == "clean") {
					t.Errorf("%s: clean=%v", ev.Key, clean)
				}
				cleanSeen = cleanSeen || clean
				if ev.CopyValue(make([]byte, 1)) != 1 {
					t.Errorf("%s: value not copied", ev.Key)
				}
				return true
			})
			want := "[k2 clean k9 k8 k7 k6 k4 k3 k1 k0]" // S3-FIFO: k2 was hit
			switch policy {
			case LRU: // k2 was moved to the head
			case FIFO: // no hit counts: newest first
				want = "[clean k9 k8 k7 k6 k4 k3 k2 k1 k0]"
			}
			if fmt.Sprint(got) != want || !cleanSeen {
				t.Fatalf("order %v, want %s", got, want)
			}
			n := 0
			m.Hottest(func(Evicted, bool) bool { n++; return n < 3 })
			if n != 3 {
				t.Fatalf("walk went on after false: %d", n)
			}
		})
	}
}

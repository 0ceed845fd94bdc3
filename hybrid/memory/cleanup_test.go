package memory

import (
	"runtime"
	"testing"
	"time"
)

// TestCollectedWithOwnerHook: a Cache whose OnEvict reaches the Cache
// (hybrid's is a method of the Cache that owns it) is collected once
// unreachable, and its cleanup, which unmaps the arenas, runs. Were the
// cleanup's argument to lead back to the Cache, neither would happen:
// every such Cache, its owner and all the owner holds would stay in
// memory for good.
func TestCollectedWithOwnerHook(t *testing.T) {
	collected := make(chan struct{})
	func() {
		type owner struct{ m *Cache }
		o := &owner{}
		m, err := New(Options{Capacity: 1 << 20, Shards: 4, OnEvict: func(Evicted) { _ = o.m }})
		if err != nil {
			t.Fatal(err)
		}
		o.m = m
		if !m.Set([]byte("k"), []byte("v"), time.Time{}) { // maps a chunk
			t.Fatal("Set refused")
		}
		runtime.AddCleanup(m, func(ch chan struct{}) { close(ch) }, collected)
		m.Close()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-collected:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the Cache was never collected: its cleanup's argument reaches it")
		}
		time.Sleep(time.Millisecond)
	}
}

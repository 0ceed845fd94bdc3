package proxy

import (
	"bytes"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestMissRechecksAfterFillEnds: a request whose lookup missed just before
// another request's fill stored the key, and which reaches the fill map
// after that fill left it, looks the store up again instead of fetching
// the key a second time.
func TestMissRechecksAfterFillEnds(t *testing.T) {
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		_, _ = w.Write([]byte("body"))
	}, nil)
	stalled, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	p.store.AfterLend = func(key []byte, hit bool) {
		if !hit && bytes.HasSuffix(key, []byte("/k")) && first.CompareAndSwap(false, true) {
			close(stalled)
			<-release
		}
	}
	done := make(chan string, 1)
	go func() { // A
		resp := p.get("/k")
		done <- string(resp.Header.Peek("Cache-Status")) + " " + string(resp.Body())
	}()
	<-stalled // A missed and waits; B misses, fills, stores
	if got := string(p.get("/k").Body()); got != "body" {
		t.Fatalf("B body %q", got)
	}
	close(release)
	select {
	case got := <-done:
		if got != "strata; hit; detail=memory body" {
			t.Errorf("A got %q, want a memory hit", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("A did not finish")
	}
	if got := p.hits.Load(); got != 1 {
		t.Errorf("origin requests = %d, want 1", got)
	}
}

package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"strata/hybrid"
	"strata/hybrid/memory"
)

// keyStore is a hybrid.Cache that remembers the last key lent, so a test
// can remove the record a response is being written from.
type keyStore struct {
	*hybrid.Cache
	mu   sync.Mutex
	last []byte
}

func (s *keyStore) Lend(key []byte, v *hybrid.Value) (hybrid.Tier, bool) {
	s.mu.Lock()
	s.last = append(s.last[:0], key...)
	s.mu.Unlock()
	return s.Cache.Lend(key, v)
}

func (s *keyStore) lastKey() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.last...)
}

// lentHarness is a Server over a memory-only hybrid.Cache (which lends
// large memory hits), an origin serving body, and an in-memory listener.
type lentHarness struct {
	t      testing.TB
	cache  *hybrid.Cache
	store  *keyStore
	srv    *Server
	http   *fasthttp.Server
	ln     *fasthttputil.InmemoryListener
	origin *httptest.Server
	wg     sync.WaitGroup
	down   bool
}

func newLentHarness(t testing.TB, body []byte) *lentHarness {
	t.Helper()
	cache, err := hybrid.Open(hybrid.Options{Memory: memory.Options{Capacity: 32 << 20, Shards: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h := &lentHarness{t: t, cache: cache, store: &keyStore{Cache: cache}}
	h.origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	h.srv, err = New(h.store, Options{
		Origins:    []OriginOptions{{URL: h.origin.URL, ResponseTimeout: 5 * time.Second}},
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.http = h.srv.HTTPServer()
	h.ln = fasthttputil.NewInmemoryListener()
	h.wg.Add(1)
	go func() { defer h.wg.Done(); _ = h.http.Serve(h.ln) }()
	t.Cleanup(func() {
		h.shutdown()
		_ = cache.Close(context.Background())
	})
	return h
}

// shutdown stops the server, which waits for every connection's response
// to be written or abandoned (and so for every body's Close). The cache
// stays open for lent.
func (h *lentHarness) shutdown() {
	if h.down {
		return
	}
	h.down = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.http.ShutdownWithContext(ctx)
	_ = h.ln.Close()
	h.wg.Wait()
	if err := h.srv.Close(ctx); err != nil {
		h.t.Errorf("Close: %v", err)
	}
	h.origin.Close()
}

// request sends method /obj on a new connection and reads the response.
func (h *lentHarness) request(method string) *fasthttp.Response {
	h.t.Helper()
	c, err := h.ln.Dial()
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s /obj HTTP/1.1\r\nHost: example.com\r\n\r\n", method)
	resp := new(fasthttp.Response)
	resp.SkipBody = method == fasthttp.MethodHead
	if err := resp.Read(bufio.NewReader(c)); err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// fill requests /obj until it is stored, and returns once the server has
// let go of the hit's body. The fill stores the body after the response
// has gone out, so after each miss fill waits for the server's fills to
// finish: a fixed count of requests in a row could run out on a loaded
// machine before the store. The server closes the hit's lease when it
// ends the connection, which may come after the client has read the
// response: a test counting Borrowed saw that lease still held.
func (h *lentHarness) fill() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if cs := h.request("GET").Header.Peek("Cache-Status"); bytes.HasPrefix(cs, []byte("strata; hit")) {
			waitFor(h.t, func() bool { return h.cache.Stats().Memory.Borrowed == 0 })
			return
		}
		waitFor(h.t, func() bool { return h.srv.nfills.Load() == 0 && len(h.srv.cz.slots) == 0 })
		if time.Now().After(deadline) {
			h.t.Fatal("/obj not stored in 10s")
		}
	}
}

// lent returns the memory tier's Values lent and not released, and the
// bytes it holds for entries removed while lent after removing the record
// last lent (nonzero iff a pin on that record is still held).
func (h *lentHarness) lent() (borrowed, bytes int64) {
	borrowed = h.cache.Stats().Memory.Borrowed
	h.cache.Remove(h.store.lastKey())
	return borrowed, h.cache.Stats().Memory.Lent
}

// TestLentHit: a memory hit of an inline body is served whole, from the
// store's lent bytes from swapBodyMin up (no value bytes copied out of the
// memory tier) and copied below it; every pin is released once the
// response is written.
func TestLentHit(t *testing.T) {
	for _, tc := range []struct {
		method   string
		size     int
		noCopies bool // the hit copies no value bytes out of the memory tier
	}{
		{"GET", 4 << 10, false},
		{"GET", 16 << 10, true}, // lent, then copied into the response (below swapBodyMin)
		{"GET", 64 << 10, true},
		{"GET", 256 << 10, true},
		{"HEAD", 256 << 10, true},
	} {
		t.Run(fmt.Sprintf("%s/%dKiB", tc.method, tc.size>>10), func(t *testing.T) {
			body := bigBody(tc.size)
			h := newLentHarness(t, body)
			h.fill()
			copied := h.cache.Stats().Memory.Copied
			resp := h.request(tc.method)
			if cs := string(resp.Header.Peek("Cache-Status")); cs != "strata; hit; detail=memory" {
				t.Fatalf("Cache-Status %q", cs)
			}
			if resp.Header.ContentLength() != len(body) {
				t.Fatalf("Content-Length %d, want %d", resp.Header.ContentLength(), len(body))
			}
			if tc.method == "GET" && !bytes.Equal(resp.Body(), body) {
				t.Fatalf("body of %d bytes differs from the origin's", len(resp.Body()))
			}
			n := h.cache.Stats().Memory.Copied - copied
			if tc.noCopies != (n == 0) {
				t.Fatalf("the hit copied %d value bytes out of memory; want copies: %v", n, !tc.noCopies)
			}
			h.shutdown()
			if b, n := h.lent(); b != 0 || n != 0 {
				t.Fatalf("%d values, %d bytes still lent after the response", b, n)
			}
		})
	}
}

// TestLentBodyClientGone: a client that sends pipelined requests for a
// large hit and leaves without reading blocks the server in the middle of
// a body, with the record pinned; once it is gone, every pin is released.
func TestLentBodyClientGone(t *testing.T) {
	body := bigBody(512 << 10)
	h := newLentHarness(t, body)
	h.fill()
	c, err := h.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // on failure; closed below otherwise
	// One write of more requests than the pipe buffers responses: the
	// server's writes block (a write per request would block the test).
	reqs := bytes.Repeat([]byte("GET /obj HTTP/1.1\r\nHost: example.com\r\n\r\n"), 16)
	if _, err := c.Write(reqs); err != nil {
		t.Fatal(err)
	}
	// The server writes a few responses into the pipe and then blocks in
	// the middle of one; from then on that response's pin is held for
	// good: Borrowed stays at 1 however long we look.
	steady := 0
	for deadline := time.Now().Add(10 * time.Second); steady < 1000 && time.Now().Before(deadline); {
		if h.cache.Stats().Memory.Borrowed > 0 {
			steady++
		} else {
			steady = 0
		}
		runtime.Gosched()
	}
	if steady < 1000 {
		t.Fatal("no response held its pin while blocked mid-body")
	}
	// Removed now, its record stays charged as lent while the write waits.
	if _, n := h.lent(); n == 0 {
		t.Fatal("the record of a response being written was freed")
	}
	_ = c.Close()
	h.shutdown()
	if b, n := h.lent(); b != 0 || n != 0 {
		t.Fatalf("%d values, %d bytes still lent after the client left", b, n)
	}
}

// TestLentHitAllocs: a 256 KiB memory hit lent to the response allocates
// nothing (STYLE rule 12), and resetting the request releases its pin.
func TestLentHitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under -race")
	}
	h := newLentHarness(t, bigBody(256<<10))
	h.fill()
	var ctx fasthttp.RequestCtx
	serve := func() {
		ctx.Request.Reset() // closes the previous response's lease
		ctx.Response.Reset()
		ctx.Request.Header.SetHost("example.com")
		ctx.Request.Header.SetRequestURI("/obj")
		h.srv.handler(&ctx)
	}
	serve()
	if got := string(ctx.Response.Header.Peek("Cache-Status")); got != "strata; hit; detail=memory" {
		t.Fatalf("not a hit: %q", got)
	}
	if n := testing.AllocsPerRun(200, serve); n != 0 {
		t.Fatalf("hit allocates %.1f times", n)
	}
	if b := h.cache.Stats().Memory.Borrowed; b != 1 {
		t.Fatalf("Borrowed %d while a response holds its body, want 1", b)
	}
	ctx.Request.Reset()
	if b := h.cache.Stats().Memory.Borrowed; b != 0 {
		t.Fatalf("Borrowed %d after the request was reset", b)
	}
}

// BenchmarkMemoryHit serves inline memory hits through the handler and
// reports the value bytes copied out of the memory tier per body byte
// served, failing above 0.05 for bodies of 64 KiB and more (lent, they
// should copy none).
func BenchmarkMemoryHit(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			h := newLentHarness(b, bigBody(size))
			h.fill()
			var ctx fasthttp.RequestCtx
			copied := h.cache.Stats().Memory.Copied
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for b.Loop() {
				ctx.Request.Reset() // closes the previous lease, as fasthttp does after the write
				ctx.Response.Reset()
				ctx.Request.Header.SetHost("example.com")
				ctx.Request.Header.SetRequestURI("/obj")
				h.srv.handler(&ctx)
			}
			b.StopTimer()
			ctx.Request.Reset()
			if n := h.cache.Stats().Memory.Borrowed; n != 0 {
				b.Fatalf("%d values still lent", n)
			}
			perByte := float64(h.cache.Stats().Memory.Copied-copied) / float64(b.N) / float64(size)
			b.ReportMetric(perByte, "copied/B")
			if size >= 64<<10 && perByte > 0.05 {
				b.Fatalf("%.3f bytes copied out of memory per byte served, want ≤ 0.05", perByte)
			}
		})
	}
}

// TestLentBodySetTwice: a second lent body on one request releases the
// first lease's pin (fasthttp would overwrite the user value unclosed).
func TestLentBodySetTwice(t *testing.T) {
	cache, err := hybrid.Open(hybrid.Options{Memory: memory.Options{Capacity: 32 << 20, Shards: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close(context.Background())
	val := bytes.Repeat([]byte("v"), 256<<10)
	cache.Insert([]byte("a"), val, time.Time{})
	cache.Insert([]byte("b"), val, time.Time{})
	var ctx fasthttp.RequestCtx
	for _, k := range []string{"a", "b"} {
		var v hybrid.Value
		if _, ok := cache.Lend([]byte(k), &v); !ok || !v.Lent() {
			t.Fatalf("%s: not lent", k)
		}
		setLentBody(&ctx, &v, v.Bytes())
	}
	if b := cache.Stats().Memory.Borrowed; b != 1 {
		t.Fatalf("Borrowed %d with one body on the response, want 1", b)
	}
	ctx.ResetUserValues()
	if b := cache.Stats().Memory.Borrowed; b != 0 {
		t.Fatalf("Borrowed %d after the request was reset", b)
	}
}

package proxy

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// TestBodyBudget: bytes within the bound are taken at once; past it a
// caller waits for a release or its deadline; the first holder always
// gets in; concurrent takers never hold more than the bound together.
func TestBodyBudget(t *testing.T) {
	var b bodyBudget
	b.init(100)
	if !b.tryAcquire(60) || b.tryAcquire(60) {
		t.Fatal("60 then 60 of 100: want yes, no")
	}
	start := time.Now()
	if b.acquire(60, 20*time.Millisecond) || time.Since(start) < 20*time.Millisecond {
		t.Fatal("acquire past the bound did not wait for its deadline")
	}
	done := make(chan bool)
	go func() { done <- b.acquire(60, 10*time.Second) }()
	time.Sleep(10 * time.Millisecond)
	b.release(60)
	if !<-done {
		t.Fatal("a release did not let the waiter in")
	}
	b.release(60)
	if !b.tryAcquire(500) {
		t.Fatal("a body larger than the bound was refused with nothing held")
	}
	b.release(500)

	var held, peak int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if !b.acquire(30, time.Second) {
					t.Error("acquire timed out")
					return
				}
				mu.Lock()
				held += 30
				peak = max(peak, held)
				mu.Unlock()
				mu.Lock()
				held -= 30
				mu.Unlock()
				b.release(30)
			}
		}()
	}
	wg.Wait()
	if peak > 100 || b.used.Load() != 0 {
		t.Fatalf("peak %d of 100, %d left held", peak, b.used.Load())
	}
}

// TestStreamBudgetOverrun: with room for one streaming slice buffer, a
// second sliced response waits StreamWait for room, then streams anyway
// (whole), counted as an overrun; HEAD needs no buffer and waits for
// nothing; once both are done the budget is empty again.
func TestStreamBudgetOverrun(t *testing.T) {
	ro := &rangeOrigin{size: 300 << 10, etag: true}
	p := newPair(t, ro.handler, func(o *Options) {
		o.SliceSize = testSlice
		o.MaxStreamBytes = testSlice + sliceHeaderLen
		o.StreamWait = 50 * time.Millisecond
	})
	want := ro.body(0)
	releaseResp(p.get("/obj"))
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	serve := func(ctx *fasthttp.RequestCtx, method string) time.Duration {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(method)
		ctx.Request.Header.SetHost("example.com")
		ctx.Request.Header.SetRequestURI("/obj")
		t0 := time.Now()
		p.srv.handler(ctx)
		return time.Since(t0)
	}
	body := func(ctx *fasthttp.RequestCtx, what string) {
		var out bytes.Buffer
		if err := ctx.Response.BodyWriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("%s: %d, %v, %d bytes", what, ctx.Response.StatusCode(), err, out.Len())
		}
		ctx.Response.Reset()
	}
	var first, second fasthttp.RequestCtx
	serve(&first, "GET") // its body stream holds the buffer until written
	if took := serve(&second, "HEAD"); second.Response.StatusCode() != 200 || took > 40*time.Millisecond {
		t.Fatalf("HEAD: %d after %v", second.Response.StatusCode(), took)
	}
	if took := serve(&second, "GET"); took < 50*time.Millisecond {
		t.Fatalf("second GET did not wait for room: %v", took)
	}
	if n := testutil.ToFloat64(p.srv.m.streamOverruns); n != 1 {
		t.Fatalf("overruns %v, want 1", n)
	}
	body(&second, "second")
	body(&first, "first")
	if u := p.srv.bodies.used.Load(); u != 0 {
		t.Fatalf("%d bytes still charged", u)
	}
}

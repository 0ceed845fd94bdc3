package proxy

import (
	"bytes"
	"sync"
	"testing"
	"time"

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

// TestStreamBudgetBusy: with room for one streaming slice buffer, a
// second sliced response waits StreamWait and gets 503 with Retry-After
// while the first still streams; once the first is done, a third is
// served whole. HEAD needs no buffer.
func TestStreamBudgetBusy(t *testing.T) {
	ro := &rangeOrigin{size: 300 << 10, etag: true}
	p := newPair(t, ro.handler, func(o *Options) {
		o.SliceSize = testSlice
		o.MaxStreamBytes = testSlice + sliceHeaderLen
		o.StreamWait = 20 * time.Millisecond
	})
	want := ro.body(0)
	releaseResp(p.get("/obj"))
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	serve := func(ctx *fasthttp.RequestCtx, method string) {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(method)
		ctx.Request.Header.SetHost("example.com")
		ctx.Request.Header.SetRequestURI("/obj")
		p.srv.handler(ctx)
	}
	var first, second fasthttp.RequestCtx
	serve(&first, "GET") // its body stream holds the buffer until written
	serve(&second, "GET")
	if second.Response.StatusCode() != 503 || string(second.Response.Header.Peek("Retry-After")) != "1" {
		t.Fatalf("second: %d, Retry-After %q", second.Response.StatusCode(), second.Response.Header.Peek("Retry-After"))
	}
	serve(&second, "HEAD")
	if second.Response.StatusCode() != 200 {
		t.Fatalf("HEAD: %d", second.Response.StatusCode())
	}
	var out bytes.Buffer
	if err := first.Response.BodyWriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("first: %v, %d bytes", err, out.Len())
	}
	first.Response.Reset()
	serve(&second, "GET")
	out.Reset()
	if err := second.Response.BodyWriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("third: %d, %v, %d bytes", second.Response.StatusCode(), err, out.Len())
	}
	second.Response.Reset()
}

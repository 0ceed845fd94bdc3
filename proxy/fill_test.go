package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// gate holds origin responses until released.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate  { return &gate{ch: make(chan struct{})} }
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }
func (g *gate) wait() { <-g.ch }

func TestCoalescing(t *testing.T) {
	g := newGate()
	body := bigBody(200 << 10) // several slices
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		g.wait()
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write(body)
	}, nil)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	statuses := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := fasthttp.AcquireRequest()
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI("http://example.com/co")
			if err := p.client.Do(req, resp); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(resp.Body(), body) {
				errs <- fmt.Errorf("body of %d bytes differs", len(resp.Body()))
			}
			statuses <- string(resp.Header.Peek("Cache-Status"))
		}()
	}
	// Release the origin once every request is waiting on the fill.
	waitFor(t, func() bool { return p.waiters("/co") >= n })
	g.open()
	wg.Wait()
	close(errs)
	close(statuses)
	for err := range errs {
		t.Error(err)
	}
	count := map[string]int{}
	for s := range statuses {
		count[s]++
	}
	if got := p.hits.Load(); got != 1 {
		t.Fatalf("origin saw %d requests, want 1 (statuses %v)", got, count)
	}
	if count["strata; fwd=uri-miss; stored"] != 1 || count["strata; fwd=uri-miss; stored; collapsed"] != n-1 {
		t.Errorf("statuses %v", count)
	}
}

// waiters returns the references held on the fill for path (-1: none).
func (p *pair) waiters(path string) int {
	key := httpcache.BuildKey(nil, []byte("http"), requestFor(path), &p.srv.opts.Key)
	sh := &p.srv.fills.shards[0]
	for i := range p.srv.fills.shards {
		sh = &p.srv.fills.shards[i]
		sh.mu.Lock()
		f := sh.m[string(key)]
		sh.mu.Unlock()
		if f != nil {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.refs - 1
		}
	}
	return -1
}

func requestFor(path string) *fasthttp.Request {
	req := &fasthttp.Request{}
	req.Header.SetHost("example.com")
	req.Header.SetRequestURI(path)
	return req
}

// waitFor polls cond (bounded: 10 s).
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLargeObjectSlices(t *testing.T) {
	body := bigBody(40 << 20)
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}, func(o *Options) { o.SliceSize = 1 << 20 })
	r := p.get("/big")
	if !bytes.Equal(r.Body(), body) {
		t.Fatalf("miss body differs (%d bytes)", len(r.Body()))
	}
	// The record is inserted after the last slice, when the body has
	// ended: the client may have read it all a moment before.
	waitFor(t, func() bool { return p.store.Len() >= 41 })
	if n := p.store.Len(); n != 41 {
		t.Fatalf("store holds %d entries, want 40 slices + 1 record", n)
	}
	r = p.get("/big")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	if !bytes.Equal(r.Body(), body) {
		t.Fatalf("hit body differs (%d bytes)", len(r.Body()))
	}
	// A missing slice: its Range request is answered 200 (this origin
	// ignores Range), which refills the object whole; the request joins
	// that fill.
	p.store.Remove(sliceKey(nil, httpcache.BuildKey(nil, []byte("http"), requestFor("/big"), &p.srv.opts.Key), 0))
	r = p.get("/big")
	// (Should the refill end before the request joins it, the request
	// fills again: "fwd=miss; stored", a third origin request.)
	cs := string(r.Header.Peek("Cache-Status"))
	if !bytes.Equal(r.Body(), body) || (cs != "strata; fwd=uri-miss; stored; collapsed" || p.hits.Load() != 2) &&
		(cs != "strata; fwd=miss; stored" || p.hits.Load() != 3) {
		t.Fatalf("refill: %q, origin saw %d requests, body of %d bytes", cs, p.hits.Load(), len(r.Body()))
	}
}

func TestChunkedLargeObject(t *testing.T) {
	body := bigBody(3<<20 + 5)
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		for b := body; len(b) > 0; {
			n := min(len(b), 100_000)
			_, _ = w.Write(b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
	}, nil)
	for i := range 2 {
		r := p.get("/chunked")
		if !bytes.Equal(r.Body(), body) {
			t.Fatalf("request %d: body differs (%d bytes)", i, len(r.Body()))
		}
	}
	if p.hits.Load() != 1 {
		t.Fatalf("origin saw %d requests", p.hits.Load())
	}
}

func TestOverMaxObjectSizePassesThrough(t *testing.T) {
	body := bigBody(300 << 10)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprint("chunked=", chunked), func(t *testing.T) {
			p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Cache-Control", "max-age=60")
				if !chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				for b := body; len(b) > 0; {
					n := min(len(b), 50_000)
					_, _ = w.Write(b[:n])
					w.(http.Flusher).Flush()
					b = b[n:]
				}
			}, func(o *Options) { o.MaxObjectSize = 100 << 10 })
			for range 2 {
				r := p.get("/huge")
				if !bytes.Equal(r.Body(), body) {
					t.Fatalf("body differs (%d bytes)", len(r.Body()))
				}
			}
			if p.hits.Load() != 2 {
				t.Fatalf("origin saw %d requests, want 2", p.hits.Load())
			}
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			if _, _, ok := p.store.Get(metaKey(nil, httpcache.BuildKey(nil, []byte("http"), requestFor("/huge"), &p.srv.opts.Key)), nil); ok {
				t.Fatal("object over MaxObjectSize was stored")
			}
		})
	}
}

// truncatingOrigin hijacks the connection and sends half the body.
func truncatingOrigin(chunked bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		c, bw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		if chunked {
			fmt.Fprint(bw, "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		} else {
			fmt.Fprint(bw, "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 100\r\n\r\nhello")
		}
		_ = bw.Flush()
	}
}

// TestTruncatedOriginBody: a body that ends short is never stored, and
// the client never sees it whole: a 200 cut short (closed connection)
// when the failure came after the headers were sent, a 502 when it was
// known before (waitHeaders).
func TestTruncatedOriginBody(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprint("chunked=", chunked), func(t *testing.T) {
			p := newPair(t, truncatingOrigin(chunked), nil)
			out, _ := p.raw("GET /t HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
			t.Logf("client saw %q", out)
			head, body, _ := strings.Cut(out, "\r\n\r\n")
			switch {
			case strings.HasPrefix(out, "HTTP/1.1 502"):
				if body != ErrTruncated.Error()+"\n" {
					t.Fatalf("502 body %q", body)
				}
			case !strings.HasPrefix(out, "HTTP/1.1 200"):
				t.Fatalf("response %q", out)
			case chunked && strings.HasSuffix(body, "0\r\n\r\n"):
				t.Fatalf("chunked body completed: %q", out)
			case !chunked && (!strings.Contains(head, "Content-Length: 100") || len(body) >= 100):
				t.Fatalf("fixed body not short: %q", out)
			}
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			if n := p.store.Len(); n != 0 {
				t.Fatalf("truncated body stored (%d entries)", n)
			}
			// A fasthttp client notices the failure.
			req := requestFor("/t2")
			var resp fasthttp.Response
			if err := p.client.Do(req, &resp); err == nil && resp.StatusCode() != 502 {
				t.Fatalf("client read a complete response: %d %q", resp.StatusCode(), resp.Body())
			}
		})
	}
}

func TestClientDisconnectDoesNotStopFill(t *testing.T) {
	body := bigBody(1 << 20)
	g := newGate()
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:1000])
		w.(http.Flusher).Flush()
		g.wait()
		_, _ = w.Write(body[1000:])
	}, nil)
	// The leader reads a little and goes away.
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "GET /dc HTTP/1.1\r\nHost: example.com\r\n\r\n")
	buf := make([]byte, 512)
	if _, err := io.ReadAtLeast(c, buf, 100); err != nil {
		t.Fatal(err)
	}
	// A second client joins the same fill.
	done := make(chan *fasthttp.Response)
	go func() { done <- p.get("/dc") }()
	waitFor(t, func() bool { return p.waiters("/dc") >= 2 })
	c.Close()
	g.open()
	r := <-done
	if !bytes.Equal(r.Body(), body) {
		t.Fatalf("second client got %d bytes", len(r.Body()))
	}
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored; collapsed")
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	r = p.get("/dc")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	if p.hits.Load() != 1 {
		t.Fatalf("origin saw %d requests", p.hits.Load())
	}
}

func TestLaggingReaderReadsFromStore(t *testing.T) {
	// A window of 2 slices and a reader that starts only after the fill
	// finished: it reads the early slices back from the store.
	body := bigBody(10 * (64 << 10))
	g := newGate()
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write(body[:10])
		w.(http.Flusher).Flush()
		g.wait()
		_, _ = w.Write(body[10:])
	}, func(o *Options) { o.FillWindow = 2; o.FillLagWait = 10 * time.Millisecond })
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /lag HTTP/1.1\r\nHost: example.com\r\n\r\n")
	waitFor(t, func() bool { return p.waiters("/lag") == 1 })
	g.open()
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	var resp fasthttp.Response
	if err := resp.Read(bufioReader(c)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(resp.Body(), body) {
		t.Fatalf("lagging reader got %d bytes", len(resp.Body()))
	}
}

var _ net.Conn

// slowRead reads a response over c at about chunk bytes per pause,
// returning the body bytes received before an error or the end.
func slowRead(t *testing.T, c net.Conn, chunk int, pause time.Duration) ([]byte, error) {
	t.Helper()
	_, _ = io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: example.com\r\n\r\n")
	br := bufioReader(c)
	var resp fasthttp.Response
	resp.SkipBody = true
	if err := resp.Header.Read(br); err != nil {
		return nil, err
	}
	want := resp.Header.ContentLength()
	var got []byte
	buf := make([]byte, chunk)
	for len(got) < want {
		n, err := io.ReadFull(br, buf[:min(chunk, want-len(got))])
		got = append(got, buf[:n]...)
		if err != nil {
			return got, err
		}
		time.Sleep(pause)
	}
	return got, nil
}

// TestSlowReaderNotCutOff: the store drops every slice (admission said
// no), the origin is faster than the client: the fill must wait for its
// reader rather than cut it off.
func TestSlowReaderNotCutOff(t *testing.T) {
	body := bigBody(12 * (64 << 10))
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}, func(o *Options) { o.FillWindow = 2; o.SliceSize = 64 << 10 })
	p.store.Drop = func([]byte) bool { return true }
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := slowRead(t, c, 128<<10, 2*time.Millisecond)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("slow reader got %d of %d bytes, err %v", len(got), len(body), err)
	}
}

// TestStalledReaderDetached: a reader that holds a stored fill back longer
// than FillLagWait is let go; the fill completes and is stored for others.
func TestStalledReaderDetached(t *testing.T) {
	body := bigBody(12 * (64 << 10))
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}, func(o *Options) { o.FillWindow = 2; o.SliceSize = 64 << 10; o.FillLagWait = 20 * time.Millisecond })
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: example.com\r\n\r\n")
	// Read nothing: the fill must still finish and commit.
	waitFor(t, func() bool { return p.hits.Load() == 1 })
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	r := p.get("/slow")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	if !bytes.Equal(r.Body(), body) {
		t.Fatalf("hit body %d bytes", len(r.Body()))
	}
	// The stalled reader reads on from the store and still gets it all.
	var resp fasthttp.Response
	if err := resp.Read(bufioReader(c)); err != nil || !bytes.Equal(resp.Body(), body) {
		t.Fatalf("detached reader: %d bytes, err %v", len(resp.Body()), err)
	}
}

// laggingRead fetches path (10 slices of 64 KiB, ETag "v1") through a
// fill that a reader lags behind: its client reads nothing until the fill
// ended, so the reader reads on from the store and finds slice 3, which
// never reached the store, missing. drop also keeps the keys it names
// from the store; committed runs after the fill ended, before the client
// reads. It returns the pair and the URL's key.
func laggingRead(t *testing.T, path string, drop func(key []byte) bool, committed func(p *pair, key []byte)) (*pair, []byte) {
	t.Helper()
	body := bigBody(10 * (64 << 10))
	g := newGate()
	// The reader may reach slice 3 before its client reads (the socket's
	// buffers take much of the body): its fetch is answered only once
	// committed has run, so that what committed put in the store is
	// there when the fetch's answer comes.
	ranges := newGate()
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("Range") != "" { // the lost slice, fetched again
			ranges.wait()
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
			return
		}
		_, _ = w.Write(body[:10])
		w.(http.Flusher).Flush()
		g.wait()
		_, _ = w.Write(body[10:])
	}, func(o *Options) { o.FillWindow = 2; o.FillLagWait = 10 * time.Millisecond })
	t.Cleanup(ranges.open) // before the origin's Close, which waits for its handlers
	key := httpcache.BuildKey(nil, []byte("http"), requestFor(path), &p.srv.opts.Key)
	lost := sliceKey(nil, key, 3)
	p.store.Drop = func(k []byte) bool { return bytes.Equal(k, lost) || drop(k) }
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: example.com\r\n\r\n")
	waitFor(t, func() bool { return p.waiters(path) == 1 })
	g.open()
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	committed(p, key)
	ranges.open()
	var resp fasthttp.Response
	if err := resp.Read(bufioReader(c)); err != nil || !bytes.Equal(resp.Body(), body) {
		t.Fatalf("lagging reader: %d of %d bytes, err %v", len(resp.Body()), len(body), err)
	}
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	return p, key
}

// TestDetachedReaderRecordGone: a lagging reader that reads on from the
// store after the fill committed, and finds the record gone (here the
// store refused it; compression at the edge puts an index in its place,
// a purge removes it), still gets the whole body, from the fill's own
// object and the slices in the store. Its connection was cut before.
func TestDetachedReaderRecordGone(t *testing.T) {
	// The record never reaches the store: the reader must read on past
	// slice 3 without it.
	p, _ := laggingRead(t, "/gone", func(k []byte) bool { return k[0] == metaKeyPrefix }, func(*pair, []byte) {})
	if n := p.hits.Load(); n != 2 {
		t.Errorf("origin asked %d times, want 2 (the fill, then slice 3)", n)
	}
}

// TestDetachedReaderKeepsIndex: a lagging reader reads on from the fill's
// own object after a variant index (compression at the edge) took the
// record's place, and fetches a lost slice again: the fetch must not put
// its record over the index, which would hide the URL's variants.
func TestDetachedReaderKeepsIndex(t *testing.T) {
	x := variantIndex{Epoch: 1, Vary: httpcache.HeaderAcceptEncoding, Keys: [][]byte{edgeVaryKey(httpcache.AcceptGzip)}}
	index := appendVariantIndex(nil, &x)
	p, key := laggingRead(t, "/indexed", func([]byte) bool { return false }, func(p *pair, key []byte) {
		p.store.Insert(metaKey(nil, key), index, time.Time{})
	})
	if v, _, ok := p.store.Get(metaKey(nil, key), nil); !ok || !bytes.Equal(v, index) {
		t.Fatalf("the URL's index was replaced (found %v, index %v)", ok, ok && isVariantIndex(v))
	}
}

// TestMaxLargeFills: beyond MaxLargeFills concurrent fills of large bodies
// a large response is streamed to its client unshared and not stored; a
// small one is still stored.
func TestMaxLargeFills(t *testing.T) {
	large := bigBody(100 << 10)
	g := newGate()
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		body := large
		if r.URL.Path == "/small" {
			body = large[:10]
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:1])
		w.(http.Flusher).Flush()
		if r.URL.Path == "/held" {
			g.wait()
		}
		_, _ = w.Write(body[1:])
	}, func(o *Options) { o.MaxLargeFills = 1 })
	held := make(chan *fasthttp.Response)
	go func() { held <- p.get("/held") }()
	waitFor(t, func() bool { return p.srv.nlarge.Load() == 1 })
	r := p.get("/other")
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss")
	expectBody(t, r, large)
	r = p.get("/small")
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored")
	g.open()
	r = <-held
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored")
	expectBody(t, r, large)
	waitFor(t, func() bool { return p.srv.nlarge.Load() == 0 && p.srv.nfills.Load() == 0 })
	r = p.get("/other") // the limit is free again: stored now
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored")
}

// TestFillPacesOnWriteQueue: a fill waits for room in the store's write
// queues before each slice it inserts; once a wait runs out it stops
// waiting for the rest of the object, and still stores it whole.
func TestFillPacesOnWriteQueue(t *testing.T) {
	body := bigBody(8 * (64 << 10))
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write(body)
	}, nil)
	var calls atomic.Int64
	p.store.Pace = func(n int) bool {
		if n != sliceHeaderLen+64<<10 {
			t.Errorf("paced for %d bytes, want a slice's", n)
		}
		return calls.Add(1) < 3 // the third wait runs out
	}
	expectBody(t, p.get("/paced"), body)
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d waits for room, want 3 (none after the one that ran out)", n)
	}
	r := p.get("/paced")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	expectBody(t, r, body)
}

// panicStore panics on the Insert of a record (metaKey): a bug in the
// store, met on the fill's path.
type panicStore struct{ *mapStore }

func (p panicStore) Insert(key, value []byte, expiry time.Time) {
	if key[0] == metaKeyPrefix {
		panic("store bug")
	}
	p.mapStore.Insert(key, value, expiry)
}

// TestLeaderFillPanicFails: a panic in a fill its leader runs inline (a
// small body) fails the fill like one in a fill goroutine: the leader gets
// a 502; a request that joined and is streaming the body gets an error
// from it (its connection would close short); nobody waits forever, and
// no fill stays counted.
func TestLeaderFillPanicFails(t *testing.T) {
	g := newGate()
	var hits atomic.Int64
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1) == 1 {
			g.wait()
		}
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write([]byte("small"))
	}))
	defer o.Close()
	srv, err := New(panicStore{newMapStore()}, Options{Origins: []OriginOptions{{URL: o.URL}}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	// do answers one GET: its status, and the error reading a streamed body.
	do := func() (int, error) {
		var ctx fasthttp.RequestCtx
		var req fasthttp.Request
		req.SetRequestURI("http://example.com/p")
		ctx.Init(&req, nil, nil)
		srv.handler(&ctx)
		var err error
		if r := ctx.Response.BodyStream(); r != nil {
			_, err = io.ReadAll(r)
			ctx.Response.CloseBodyStream()
		}
		return ctx.Response.StatusCode(), err
	}
	type answer struct {
		code int
		err  error
	}
	lead, follow := make(chan answer), make(chan answer)
	go func() { c, err := do(); lead <- answer{c, err} }()
	waitFor(t, func() bool { return hits.Load() == 1 })
	go func() { c, err := do(); follow <- answer{c, err} }()
	time.Sleep(20 * time.Millisecond) // the follower joins the fill
	g.open()
	for name, ch := range map[string]chan answer{"leader": lead, "follower": follow} {
		select {
		case a := <-ch:
			switch {
			case name == "leader" && a.code != fasthttp.StatusBadGateway:
				t.Errorf("leader: status %d, want 502", a.code)
			case name == "follower" && a.code != fasthttp.StatusBadGateway && a.err == nil:
				t.Errorf("follower: status %d and a whole body, want a 502 or a body cut by an error", a.code)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s still waiting 5 s after the fill panicked", name)
		}
	}
	if srv.nfills.Load() != 0 {
		t.Errorf("%d fills still counted", srv.nfills.Load())
	}
}

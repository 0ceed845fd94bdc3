package proxy

import (
	"context"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"strata/hybrid"
	"strata/hybrid/memory"
)

// missConn is a net.Conn that reads n GET requests for distinct URLs
// (/m/0, /m/1, …) and discards what is written.
type missConn struct {
	replayConn
	i   int
	buf []byte
}

func (c *missConn) Read(b []byte) (int, error) {
	if len(c.buf) == 0 {
		if c.i == c.n {
			return 0, io.EOF
		}
		c.buf = strconv.AppendInt(append(c.buf[:0], "GET /m/"...), int64(c.i), 10)
		c.buf = append(c.buf, " HTTP/1.1\r\nHost: example.com\r\n\r\n"...)
		c.i++
	}
	k := copy(b, c.buf)
	c.buf = c.buf[k:]
	return k, nil
}

// missServer is a Server over a mapStore whose origin is a fasthttp
// server on loopback answering every URL with a cacheable 1 KiB body (it
// allocates next to nothing itself).
func missServer(tb testing.TB) (*fasthttp.Server, *mapStore) {
	store := newMapStore()
	return missServerOver(tb, store), store
}

// missServerOver is missServer over store.
func missServerOver(tb testing.TB, store Store) *fasthttp.Server {
	addr := missOrigin(tb)
	srv, err := New(store, Options{
		Origins:    []OriginOptions{{URL: "http://" + addr, ResponseTimeout: 5 * time.Second}},
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close(context.Background()) })
	return srv.HTTPServer()
}

// missOrigin starts missServer's origin and returns its address.
func missOrigin(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	body := []byte(strings.Repeat("x", 1024))
	origin := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Response.Header
		h.Set("Cache-Control", "public, max-age=3600")
		// Not a compressible type: compression at the edge (once per
		// object, off the request path) is measured by compress_test.go.
		h.Set("Content-Type", "application/octet-stream")
		h.Set("ETag", `"5d8c72a5edda8d6a"`)
		h.Set("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT")
		ctx.SetBody(body)
	}}
	go func() { _ = origin.Serve(ln) }()
	tb.Cleanup(func() { _ = origin.Shutdown() })
	return ln.Addr().String()
}

// BenchmarkMiss serves 1 KiB misses through fasthttp's server loop on a
// replayed connection, each a new URL: a miss's CPU and allocations (the
// origin's small share included) without the client socket.
func BenchmarkMiss(b *testing.B) {
	hs, store := missServer(b)
	conn := serveMisses(b, hs)
	if store.Len() < b.N || conn.written < int64(b.N)*1024 {
		b.Fatalf("%d stored, %d bytes written for %d misses", store.Len(), conn.written, b.N)
	}
}

// serveMisses serves b.N misses through hs on a replayed connection,
// timed, and reports CPU ns and page faults per miss besides allocations.
func serveMisses(b *testing.B, hs *fasthttp.Server) *missConn {
	return serveMissesOn(b, hs, 1)
}

// serveMissesOn is serveMisses over conns connections served at once,
// each asking for its own URLs; it returns one connection standing for
// all (written: the bytes all were sent).
func serveMissesOn(b *testing.B, hs *fasthttp.Server, conns int) *missConn {
	b.ReportAllocs()
	b.SetBytes(1024)
	cs := make([]*missConn, conns)
	for i := range cs {
		lo, hi := b.N*i/conns, b.N*(i+1)/conns
		cs[i] = &missConn{replayConn: replayConn{n: hi}, i: lo}
	}
	b.ResetTimer()
	cpu0, faults0 := processCPU(), processFaults()
	var wg sync.WaitGroup
	errs := make([]error, conns)
	for i, c := range cs {
		wg.Go(func() { errs[i] = hs.ServeConn(c) })
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(processFaults()-faults0)/float64(b.N), "faults/op")
	all := &missConn{}
	for i, c := range cs {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		all.written += c.written
	}
	return all
}

// BenchmarkMissHybrid is BenchmarkMiss over a memory-only hybrid.Cache
// of 256 MiB that starts empty, as the peer benchmark's misses fill one:
// the memory tier's insert (arena, index and slot growth) included.
func BenchmarkMissHybrid(b *testing.B) {
	cache, err := hybrid.Open(hybrid.Options{Memory: memory.Options{Capacity: 256 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cache.Close(context.Background()) })
	hs := missServerOver(b, cache)
	conn := serveMisses(b, hs)
	if st := cache.Stats().Memory; conn.written < int64(b.N)*1024 || st.Sets == 0 {
		b.Fatalf("%d sets, %d bytes written for %d misses", st.Sets, conn.written, b.N)
	}
}

// BenchmarkMissBare is BenchmarkMiss through a bare fasthttp proxy
// (HostClient.Do to the same origin, the response copied to the client,
// nothing stored): the Go ceiling a miss's CPU is held against.
func BenchmarkMissBare(b *testing.B) {
	conn := serveMisses(b, bareProxy(b))
	if conn.written < int64(b.N)*1024 {
		b.Fatalf("%d bytes written for %d misses", conn.written, b.N)
	}
}

// bareProxy is BenchmarkMissBare's proxy.
func bareProxy(b *testing.B) *fasthttp.Server {
	hc := &fasthttp.HostClient{Addr: missOrigin(b), Dial: func(addr string) (net.Conn, error) {
		return net.Dial("tcp", addr) // fasthttp's default dialer leaves a goroutine behind
	}}
	return &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}}
}

// BenchmarkMissParallel is BenchmarkMissBare and BenchmarkMissHybrid
// with 16 client connections served at once (origin connections as
// needed): hand-offs and wake-ups between goroutines show here.
func BenchmarkMissParallel(b *testing.B) {
	const conns = 16
	b.Run("bare", func(b *testing.B) {
		if conn := serveMissesOn(b, bareProxy(b), conns); conn.written < int64(b.N)*1024 {
			b.Fatalf("%d bytes written for %d misses", conn.written, b.N)
		}
	})
	b.Run("hybrid", func(b *testing.B) {
		cache, err := hybrid.Open(hybrid.Options{Memory: memory.Options{Capacity: 256 << 20}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cache.Close(context.Background()) })
		if conn := serveMissesOn(b, missServerOver(b, cache), conns); conn.written < int64(b.N)*1024 {
			b.Fatalf("%d bytes written for %d misses", conn.written, b.N)
		}
	})
}

// TestMissAllocs bounds the allocations of a 1 KiB miss, the origin
// exchange and the test store's copy included (29 when written: fasthttp's
// streamed client response ~5, the fill, its context and deadline, the
// stored headers, the store's copy; 21 since the fill's context is its
// opLife, whose timer is the one allocation left of the 8 it took; 18
// with edge.early_hints on, whose requests take strata's own transport,
// origin_hints.go, not fasthttp's default; 8 since fills are recycled,
// fill_pool.go: fasthttp's streamed client response 4, the test store's
// copy 2, the replayed connection 2, none of strata's own; 5 since every
// origin exchange takes strata's transport, whose streamed body is one
// allocation, origin_hints.go).
func TestMissAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	hs, store := missServer(t)
	const n = 2000
	conn := &missConn{replayConn: replayConn{n: 200}}
	if err := hs.ServeConn(conn); err != nil { // warm pools and the origin connection
		t.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	conn = &missConn{replayConn: replayConn{n: 200 + n}, i: 200} // URLs /m/200 on
	if err := hs.ServeConn(conn); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms1)
	if store.Len() < 200+n {
		t.Fatalf("%d stored", store.Len())
	}
	if per := float64(ms1.Mallocs-ms0.Mallocs) / n; per > 5.5 {
		t.Errorf("%.1f allocations per miss, want <= 5", per)
	}
}

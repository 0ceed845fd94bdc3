package proxy

import (
	"context"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
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
	store := newMapStore()
	srv, err := New(store, Options{
		Origins:    []OriginOptions{{URL: "http://" + ln.Addr().String(), ResponseTimeout: 5 * time.Second}},
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = srv.Close(context.Background())
		_ = origin.Shutdown()
	})
	return srv.HTTPServer(), store
}

// BenchmarkMiss serves 1 KiB misses through fasthttp's server loop on a
// replayed connection, each a new URL: a miss's CPU and allocations (the
// origin's small share included) without the client socket.
func BenchmarkMiss(b *testing.B) {
	hs, store := missServer(b)
	b.ReportAllocs()
	b.SetBytes(1024)
	b.ResetTimer()
	cpu0 := processCPU()
	conn := &missConn{replayConn: replayConn{n: b.N}}
	if err := hs.ServeConn(conn); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	if store.Len() < b.N || conn.written < int64(b.N)*1024 {
		b.Fatalf("%d stored, %d bytes written for %d misses", store.Len(), conn.written, b.N)
	}
}

// TestMissAllocs bounds the allocations of a 1 KiB miss, the origin
// exchange and the test store's copy included (29 when written: fasthttp's
// streamed client response ~5, the fill, its context and deadline, the
// stored headers, the store's copy; 21 since the fill's context is its
// opLife, whose timer is the one allocation left of the 8 it took; 18
// with edge.early_hints on, whose requests take strata's own transport,
// origin_hints.go, not fasthttp's default; 8 since fills are recycled,
// fill_pool.go: fasthttp's streamed client response 4, the test store's
// copy 2, the replayed connection 2, none of strata's own).
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
	if per := float64(ms1.Mallocs-ms0.Mallocs) / n; per > 8.5 {
		t.Errorf("%.1f allocations per miss, want <= 8", per)
	}
}

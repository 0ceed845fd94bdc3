package proxy

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"strata/hybrid"
	"strata/hybrid/memory"
)

// The sizes of BenchmarkColdFill's objects: 64 slices, and a body that
// lives in its record.
const (
	coldBody   = 64 << 20
	coldInline = 512 << 10
)

// coldConn is a net.Conn that sends n GETs for distinct URLs (/cold/0,
// /cold/1, …) one at a time, each once the previous response has been
// written whole, and discards what is written.
type coldConn struct {
	replayConn
	i, size int
	want    int64 // bytes written when the current response is whole
	buf     []byte
}

func (c *coldConn) Read(b []byte) (int, error) {
	if len(c.buf) == 0 {
		if c.i == c.n || c.written < c.want {
			return 0, io.EOF // fasthttp closes the connection after the response
		}
		c.buf = strconv.AppendInt(append(c.buf[:0], "GET /cold/"...), int64(c.i), 10)
		c.buf = append(c.buf, " HTTP/1.1\r\nHost: example.com\r\n\r\n"...)
		c.want = c.written + int64(c.size)
		c.i++
	}
	k := copy(b, c.buf)
	c.buf = c.buf[k:]
	return k, nil
}

// coldOrigin starts a fasthttp server on loopback answering every URL
// with the same cacheable body of size bytes, from one buffer, and
// returns its URL.
func coldOrigin(tb testing.TB, size int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	body := bigBody(size)
	origin := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Response.Header
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("Content-Type", "application/octet-stream")
		h.Set("ETag", `"5d8c72a5edda8d6a"`)
		ctx.Response.SetBodyRaw(body)
	}}
	go func() { _ = origin.Serve(ln) }()
	tb.Cleanup(func() { _ = origin.Shutdown() })
	return "http://" + ln.Addr().String()
}

// coldServer is a Server for origin over a fresh memory-only hybrid.Cache
// of capacity bytes; maxObject is Options.MaxObjectSize.
func coldServer(tb testing.TB, origin string, capacity, maxObject int64) (*Server, *hybrid.Cache) {
	cache, err := hybrid.Open(hybrid.Options{Memory: memory.Options{Capacity: capacity}})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := New(cache, Options{
		Origins:       []OriginOptions{{URL: origin, ResponseTimeout: 5 * time.Second}},
		MaxObjectSize: maxObject,
		Registerer:    prometheus.NewRegistry(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return srv, cache
}

// closeCold closes what coldServer built.
func closeCold(srv *Server, cache *hybrid.Cache) {
	_ = srv.Close(context.Background())
	_ = cache.Close(context.Background())
}

// BenchmarkColdFill serves cold GETs of a 64 MiB object (a new URL each)
// from a fast local origin through the proxy into a memory-only cache:
// the store path of a large fill. "stored" runs every GET through one
// 256 MiB cache, whose blocks are recycled once it is full (a running
// cache); "fresh" builds a new cache for each GET (a cold process: the
// memory tier's pages are new); "through" is the object over
// MaxObjectSize, streamed and not stored: the cost of the hops alone;
// "inline" is stored of a 512 KiB object, whose body lives in its record.
// Reports MB/s and CPU ns per MiB (the origin's share included).
func BenchmarkColdFill(b *testing.B) {
	origins := map[int]string{coldBody: coldOrigin(b, coldBody), coldInline: coldOrigin(b, coldInline)}
	for _, c := range []struct {
		name  string
		size  int
		max   int64
		fresh bool
	}{
		{"stored", coldBody, 0, false}, {"fresh", coldBody, 0, true},
		{"through", coldBody, coldBody / 2, false}, {"inline", coldInline, 0, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv, cache := coldServer(b, origins[c.size], 256<<20, c.max)
			b.ReportAllocs()
			b.SetBytes(int64(c.size))
			b.ResetTimer()
			cpu0 := processCPU()
			var written int64
			for i := 0; i < b.N; {
				conn := &coldConn{replayConn: replayConn{n: b.N}, i: i, size: c.size}
				if c.fresh {
					closeCold(srv, cache)
					srv, cache = coldServer(b, origins[c.size], int64(c.size+c.size/2), c.max)
					conn.n = i + 1
				}
				if err := srv.HTTPServer().ServeConn(conn); err != nil {
					b.Fatal(err)
				}
				i, written = conn.n, written+conn.written
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/(float64(c.size)/(1<<20)), "cpu-ns/MiB")
			st := cache.Stats().Memory
			closeCold(srv, cache)
			if written < int64(b.N)*int64(c.size) {
				b.Fatalf("%d bytes written for %d GETs", written, b.N)
			}
			if stored := st.Sets >= uint64(c.size/DefaultSliceSize+1); stored != (c.max == 0) || st.Refused > 0 {
				b.Fatalf("%d GETs: %d entries stored, %d refused", b.N, st.Sets, st.Refused)
			}
		})
	}
}

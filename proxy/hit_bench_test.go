package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchOrigin answers with a 1 KiB body and the header set of a typical
// cacheable response (net/http adds Date and Content-Length).
func benchOrigin(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("ETag", `"5d8c72a5edda8d6a"`)
	h.Set("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT")
	h.Set("X-Request-Id", "0f3a9c5e-1b7d-4e2a-9c3b-7d5e1f2a3b4c")
	_, _ = io.WriteString(w, strings.Repeat("x", 1024))
}

// replayConn is a net.Conn that reads req n times and discards what is
// written: fasthttp's whole server loop without a socket.
type replayConn struct {
	req     string
	n, off  int
	written int64
}

func (c *replayConn) Read(b []byte) (int, error) {
	k := 0
	for k < len(b) && c.n > 0 {
		m := copy(b[k:], c.req[c.off:])
		k, c.off = k+m, c.off+m
		if c.off == len(c.req) {
			c.off, c.n = 0, c.n-1
		}
	}
	if k == 0 {
		return 0, io.EOF
	}
	return k, nil
}
func (c *replayConn) Write(b []byte) (int, error) { c.written += int64(len(b)); return len(b), nil }
func (c *replayConn) Close() error                { return nil }
func (c *replayConn) LocalAddr() net.Addr         { return replayLocal }
func (c *replayConn) RemoteAddr() net.Addr        { return replayRemote }

// The addresses of every replayConn, made once: a real connection's do
// not allocate per request either.
var (
	replayLocal  net.Addr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
	replayRemote net.Addr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}
)

func (c *replayConn) SetDeadline(time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkHit serves a stored 1 KiB object from the memory tier through
// fasthttp's server loop on a replayed connection (pipelined requests, the
// responses discarded): a hit's CPU without the socket's.
func BenchmarkHit(b *testing.B) {
	for _, c := range []struct{ name, req string }{
		{"GET", "GET /hit HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{"HEAD", "HEAD /hit HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{"304", "GET /hit HTTP/1.1\r\nHost: example.com\r\nIf-None-Match: \"5d8c72a5edda8d6a\"\r\n\r\n"},
	} {
		b.Run(c.name, func(b *testing.B) { benchHit(b, benchOrigin, nil, c.req, 1024) })
	}
}

// benchHit fills /hit from origin, then serves req b.N times from the
// store through fasthttp's server loop (see BenchmarkHit).
func benchHit(b *testing.B, origin http.HandlerFunc, mod func(*Options), req string, size int64) {
	p := newPair(&testing.T{}, origin, mod)
	defer p.close()
	if r := p.get("/hit"); r.StatusCode() != 200 {
		b.Fatalf("fill: %d", r.StatusCode())
	}
	p.settle()
	hits := p.hits.Load()
	b.ReportAllocs()
	b.SetBytes(size)
	b.ResetTimer()
	cpu0 := processCPU()
	conn := &replayConn{req: req, n: b.N}
	if err := p.http.ServeConn(conn); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// CPU time is steadier than wall time on a shared machine.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(conn.written)/float64(b.N), "wire-B/op")
	if p.hits.Load() != hits || conn.written < int64(b.N)*100 {
		b.Fatalf("not served from cache: %d origin requests, %d bytes written", p.hits.Load()-hits, conn.written)
	}
}

// BenchmarkHitCompressed serves a stored 16 KiB HTML page to clients
// asking for identity, gzip and br, with compression at the edge on and
// off: a hit costs the same whatever the coding (the bytes were
// compressed once, at store), and wire-B/op shows what it saves.
func BenchmarkHitCompressed(b *testing.B) {
	body := compressText(16 << 10)
	origin := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("ETag", `"5d8c72a5edda8d6a"`)
		_, _ = w.Write(body)
	}
	benchHitCodings(b, origin, 0, int64(len(body)))
}

// benchHitCodings runs benchHit for clients of each coding with
// compression at the edge on, and for one with it off, with slices of
// sliceSize (0: the harness's).
func benchHitCodings(b *testing.B, origin http.HandlerFunc, sliceSize int, size int64) {
	for _, c := range []struct {
		name, ae string
		off      bool
	}{{"off/identity", "gzip, deflate, br", true}, {"on/identity", "identity", false},
		{"on/gzip", "gzip, deflate", false}, {"on/br", "gzip, deflate, br", false}} {
		req := "GET /hit HTTP/1.1\r\nHost: example.com\r\nAccept-Encoding: " + c.ae + "\r\n\r\n"
		b.Run(c.name, func(b *testing.B) {
			benchHit(b, origin, func(o *Options) {
				o.Compress.Disable = c.off
				if sliceSize > 0 {
					o.SliceSize = sliceSize
				}
			}, req, size)
		})
	}
}

// processCPU returns the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processFaults returns the page faults the process has taken (minor and
// major).
func processFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt + ru.Majflt
}

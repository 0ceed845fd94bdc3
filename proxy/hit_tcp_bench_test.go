package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkHitTCP serves a stored object over a loopback TCP connection
// (one client, keep-alive, not pipelined), its listener given to fasthttp
// as it is (raw) or through Server.Listener (hints): the cost of the
// listener's connections on a hit, whose inline body fasthttp writes with
// the header in one writev on a *net.TCPConn only.
func BenchmarkHitTCP(b *testing.B) {
	for _, size := range []int{16 << 10, 256 << 10} {
		for _, wrapped := range []bool{false, true} {
			name := strconv.Itoa(size>>10) + "KiB/raw"
			if wrapped {
				name = strconv.Itoa(size>>10) + "KiB/hints"
			}
			b.Run(name, func(b *testing.B) { benchHitTCP(b, size, wrapped) })
		}
	}
}

func benchHitTCP(b *testing.B, size int, wrapped bool) {
	body := strings.Repeat("x", size)
	p := newPair(&testing.T{}, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		_, _ = io.WriteString(w, body)
	}, nil)
	defer p.close()
	if r := p.get("/hit"); r.StatusCode() != 200 {
		b.Fatalf("fill: %d", r.StatusCode())
	}
	p.settle()
	addr, stop := serveLoopback(b, func(ln net.Listener) error {
		if wrapped {
			ln = p.srv.Listener(ln)
		}
		return p.http.Serve(ln)
	})
	defer stop()
	hits := p.hits.Load()
	benchGetTCP(b, addr, size)
	if p.hits.Load() != hits {
		b.Fatal("not served from cache")
	}
}

// serveLoopback runs serve on a new loopback listener and returns its
// address and a func that closes the listener and waits for serve.
func serveLoopback(b *testing.B, serve func(net.Listener) error) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = serve(ln)
	}()
	return ln.Addr().String(), func() { _ = ln.Close(); <-served }
}

// benchGetTCP sends b.N requests for /hit, one at a time on one keep-alive
// connection to addr, reads each response (a body of size bytes), and
// reports the process's CPU per request (cpu-ns/op). It returns the last
// body.
func benchGetTCP(b *testing.B, addr string, size int) []byte {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	req := []byte("GET /hit HTTP/1.1\r\nHost: example.com\r\n\r\n")
	buf := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		for { // the header block
			l, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if len(l) == 2 {
				break
			}
		}
		if _, err := io.ReadFull(br, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	return buf
}

// BenchmarkSplitBodyTCP weighs the two ways fasthttp can send a hit whose
// body the memory tier lends in pieces (hybrid.Value.Spans: an entry
// stored in several runs of arena blocks), over a loopback TCP connection
// (one client, keep-alive, not pipelined): join copies the pieces into
// one buffer and sets it raw (header and body in one writev, as a
// contiguous body is sent: pieces=1); stream sets a body stream whose
// WriteTo hands each piece to fasthttp's bufio.Writer (no copy of the
// body, but the header goes out with the first 4 KiB of it and every
// piece in a write of its own). cpu-ns/op is the process's CPU per hit,
// client included.
func BenchmarkSplitBodyTCP(b *testing.B) {
	for _, size := range []int{64 << 10, 256 << 10} {
		for _, pieces := range []int{1, 2, 3} {
			for _, mode := range []string{"join", "stream"} {
				if pieces == 1 && mode == "stream" {
					continue
				}
				b.Run(fmt.Sprintf("%dKiB/pieces=%d/%s", size>>10, pieces, mode), func(b *testing.B) {
					benchSplitBodyTCP(b, size, pieces, mode == "stream")
				})
			}
		}
	}
}

// spansBody is a body stream over pieces lent by the store.
type spansBody struct {
	spans [][]byte
	i     int
}

func (s *spansBody) Read(p []byte) (int, error) {
	for s.i < len(s.spans) && len(s.spans[s.i]) == 0 {
		s.i++
	}
	if s.i == len(s.spans) {
		return 0, io.EOF
	}
	n := copy(p, s.spans[s.i])
	s.spans[s.i] = s.spans[s.i][n:]
	return n, nil
}

func (s *spansBody) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for ; s.i < len(s.spans); s.i++ {
		n, err := w.Write(s.spans[s.i])
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s *spansBody) SupportsBodyWriteTo() bool { return true }

func benchSplitBodyTCP(b *testing.B, size, pieces int, stream bool) {
	// The pieces lie apart in one arena-like buffer, as runs of blocks do.
	arena := make([]byte, 2*size)
	for i := range arena {
		arena[i] = byte(i)
	}
	spans := make([][]byte, pieces)
	for i := range pieces {
		off := i * 2 * (size / pieces)
		spans[i] = arena[off : off+size/pieces]
	}
	spans[pieces-1] = spans[pieces-1][:size-(pieces-1)*(size/pieces)]
	var joined []byte
	var body spansBody
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.SetContentType("application/octet-stream")
		ctx.Response.Header.Set("Cache-Control", "max-age=3600")
		ctx.Response.Header.Set("Cache-Status", "strata; hit")
		switch {
		case pieces == 1:
			ctx.Response.SetBodyRaw(spans[0])
		case stream:
			body.spans = append(body.spans[:0], spans...)
			body.i = 0
			ctx.Response.SetBodyStream(&body, size)
		default:
			joined = joined[:0]
			for _, p := range spans {
				joined = append(joined, p...)
			}
			ctx.Response.SetBodyRaw(joined)
		}
	}}
	addr, stop := serveLoopback(b, srv.Serve)
	defer stop()
	b.ReportAllocs()
	buf := benchGetTCP(b, addr, size)
	if buf[size-1] != spans[pieces-1][len(spans[pieces-1])-1] {
		b.Fatal("wrong body")
	}
}

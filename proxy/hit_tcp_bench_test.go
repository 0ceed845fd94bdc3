package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		var l net.Listener = ln
		if wrapped {
			l = p.srv.Listener(ln)
		}
		_ = p.http.Serve(l)
	}()
	defer func() { _ = ln.Close(); <-served }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	req := []byte("GET /hit HTTP/1.1\r\nHost: example.com\r\n\r\n")
	buf := make([]byte, size)
	hits := p.hits.Load()
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
	if p.hits.Load() != hits {
		b.Fatal("not served from cache")
	}
}

package proxy

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// missOriginHeader is the header block missOrigin's responses arrive with.
const missOriginHeader = "HTTP/1.1 200 OK\r\n" +
	"Server: fasthttp\r\n" +
	"Date: Thu, 03 Dec 2026 07:14:02 GMT\r\n" +
	"Content-Type: application/octet-stream\r\n" +
	"Content-Length: 1024\r\n" +
	"Cache-Control: public, max-age=3600\r\n" +
	"Etag: \"5d8c72a5edda8d6a\"\r\n" +
	"Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\n\r\n"

// readResponseHeader parses raw (a status line and fields) into h.
func readResponseHeader(tb testing.TB, h *fasthttp.ResponseHeader, raw string) {
	h.Reset()
	if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		tb.Fatal(err)
	}
}

// discardStore is a Store that keeps nothing and takes a record in parts,
// as hybrid.Cache does: what the benchmarks below measure is the proxy's
// side of an insert.
type discardStore struct{ mapStore }

func (*discardStore) Insert([]byte, []byte, time.Time)                      {}
func (*discardStore) InsertParts([]byte, []byte, []byte, []byte, time.Time) {}

// benchServer is a Server over store whose origin is never asked.
func benchServer(tb testing.TB, store Store) *Server {
	srv, err := New(store, Options{
		Origins:    []OriginOptions{{URL: "http://127.0.0.1:1"}},
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close(context.Background()) })
	return srv
}

// BenchmarkMissCompressible: the compression check of a miss's fill on
// missOrigin's headers (not a compressible type).
func BenchmarkMissCompressible(b *testing.B) {
	s := benchServer(b, newMapStore())
	var h fasthttp.ResponseHeader
	readResponseHeader(b, &h, missOriginHeader)
	si := httpcache.StoreInfo{Store: true}
	b.ReportAllocs()
	defer reportCPU(b, processCPU())
	for b.Loop() {
		if s.compressible(&h, &si, 1024) {
			b.Fatal("compressible")
		}
	}
}

// BenchmarkMissRecord: the header work of a 1 KiB miss's fill from the
// origin's response header to its inserted record: the store decision,
// the stored fields (fill.start) and the record's encoding (commitRecord),
// on a recycled fill, into a store that discards.
func BenchmarkMissRecord(b *testing.B) {
	s := benchServer(b, &discardStore{})
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	readResponseHeader(b, &resp.Header, missOriginHeader)
	f := acquireFill(s, []byte("example.com/m/0"))
	body := make([]byte, 1024)
	var rp httpcache.RequestPolicy
	now := time.Now()
	b.ReportAllocs()
	defer reportCPU(b, processCPU())
	for b.Loop() {
		var si httpcache.StoreInfo
		httpcache.StoreDecision(&si, &rp, resp.StatusCode(), &resp.Header, now, &s.cfg().Policy)
		f.start(&si, resp, now, now)
		f.obj.BodyLen, f.obj.Body = int64(len(body)), body
		f.commitRecord()
	}
}

// reportCPU reports the process CPU time per op since cpu0: on a shared
// machine a steadier figure than wall time, which counts the time other
// processes held the core.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkMissWriteHeaders: the stored fields of a typical response set
// on a miss's client response (serveFill), its Date included.
func BenchmarkMissWriteHeaders(b *testing.B) {
	s := benchServer(b, newMapStore())
	var h fasthttp.ResponseHeader
	b.ReportAllocs()
	defer reportCPU(b, processCPU())
	for b.Loop() {
		h.Reset()
		h.SetStatusCode(200)
		s.writeFillHeaders(&h, typicalHeaders)
	}
}

// BenchmarkInstallDate: installDate alone.
func BenchmarkInstallDate(b *testing.B) {
	var h fasthttp.ResponseHeader
	date := []byte("Wed, 02 Dec 2026 06:48:42 GMT")
	b.ReportAllocs()
	defer reportCPU(b, processCPU())
	for b.Loop() {
		h.Reset()
		h.SetStatusCode(200)
		installDate(&h, date)
	}
}

// BenchmarkMissOriginRequest: a miss's origin request built from its
// client's (startFill: prepareFillRequest).
func BenchmarkMissOriginRequest(b *testing.B) {
	s := benchServer(b, newMapStore())
	o := s.set.Load().router.pick([]byte("example.com"))
	ctx := requestCtx(b, "GET /m/17 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\nAccept-Encoding: gzip\r\n\r\n")
	b.ReportAllocs()
	defer reportCPU(b, processCPU())
	for b.Loop() {
		req := fasthttp.AcquireRequest()
		s.prepareFillRequest(req, ctx, o)
		fasthttp.ReleaseRequest(req)
	}
}

package proxy

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/accesslog"
)

// fileAccessLogger is cmd/proxy's adapter in miniature: the entry a
// request makes, written to an accesslog.Log.
type fileAccessLogger struct{ l *accesslog.Log }

func (f fileAccessLogger) Timed() bool       { return f.l.Timed() }
func (f fileAccessLogger) Second() time.Time { return f.l.Second() }

func (f fileAccessLogger) LogAccess(ctx *fasthttp.RequestCtx, r *AccessRecord) {
	e := accesslog.Entry{Time: r.Start, Conn: ctx.ConnID(), Method: ctx.Method(), URI: ctx.RequestURI(), Proto: ctx.Request.Header.Protocol(),
		Referer: ctx.Request.Header.Referer(), UserAgent: ctx.Request.Header.UserAgent(), Status: ctx.Response.StatusCode(),
		Bytes: int64(len(ctx.Response.Body())), CacheStatus: r.CacheStatus, Detail: r.Detail, Tier: r.Tier}
	if f.l.Timed() {
		e.Duration = time.Since(r.Start)
	}
	if tcp, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		e.Remote = tcp.AddrPort().Addr()
	}
	f.l.Write(&e)
}

// BenchmarkHit1KiB: the handler's CPU for a 1 KiB memory hit without
// the access log, with LoggedHandler around a logger that does nothing
// (wrapper), and with the log (combined, json) written to a file: the
// difference is what logging adds to each request. cpu-ns/op is the
// process's CPU time (user and system, the log's writer goroutine and its
// writes included) per request: on a shared machine it varies far less
// than ns/op, which counts the time other processes take. Run with -cpu 1
// so that the writer's work is done on the benchmark's own P.
func BenchmarkHit1KiB(b *testing.B) {
	// newPair takes a *testing.T; a bare one serves here (its Cleanup
	// never runs, so p.close is deferred).
	p := newPair(&testing.T{}, cacheable(strings.Repeat("x", 1024)), nil)
	defer p.close()
	p.get("/bench")
	for _, mode := range []string{"off", "wrapper", accesslog.FormatCombined, accesslog.FormatJSON} {
		b.Run(mode, func(b *testing.B) {
			h := p.srv.handler
			switch mode {
			case "off":
			case "wrapper": // LoggedHandler's own part: record, start time, classify
				h = p.srv.LoggedHandler(h, &nopAccessLogger{})
			default:
				l, err := accesslog.Open(accesslog.Options{Path: filepath.Join(b.TempDir(), "access.log"), Format: mode})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close(context.Background())
				h = p.srv.LoggedHandler(h, fileAccessLogger{l})
			}
			var ctx fasthttp.RequestCtx
			ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.Header.SetHost("example.com")
				ctx.Request.Header.SetRequestURI("/bench")
				ctx.Request.Header.SetUserAgent("wrk")
				h(&ctx)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

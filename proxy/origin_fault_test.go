package proxy

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// TestOriginFaults: each way an origin's response can be refused before
// its body is answered with its own status and text, counted under its
// own kind, never stored, and asked for once; only an origin that sent
// nothing is asked a second time (a stale kept-alive connection).
func TestOriginFaults(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\n"
	tests := []struct {
		name     string
		resp     string
		fault    error
		requests int64 // origin requests per client request
	}{
		{"header too large", ok + "X-Big: " + strings.Repeat("a", 70<<10) + "\r\nContent-Length: 2\r\n\r\nhi", ErrOriginHeaderTooLarge, 1},
		{"many headers too large", ok + strings.Repeat("X-Meta: "+strings.Repeat("m", 1000)+"\r\n", 70) + "Content-Length: 2\r\n\r\nhi", ErrOriginHeaderTooLarge, 1},
		{"duplicate Content-Length", ok + "Content-Length: 2\r\nContent-Length: 2\r\n\r\nhi", ErrOriginContentLength, 1},
		{"conflicting Content-Length", ok + "Content-Length: 2\r\nContent-Length: 3\r\n\r\nhi!", ErrOriginContentLength, 1},
		{"non-numeric Content-Length", ok + "Content-Length: 2x\r\n\r\nhi", ErrOriginContentLength, 1},
		{"negative Content-Length", ok + "Content-Length: -2\r\n\r\nhi", ErrOriginContentLength, 1},
		{"too many 1xx", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 101) + ok + "Content-Length: 2\r\n\r\nhi", ErrOriginInterim, 1},
		{"bad status line", "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nhi", ErrOriginMalformed, 1},
		{"not HTTP", "SSH-2.0-OpenSSH_9.6\r\n\r\n", ErrOriginMalformed, 1},
		{"bad field name", ok + "Bad Name\x01: x\r\nContent-Length: 2\r\n\r\nhi", ErrOriginMalformed, 1},
		{"header cut short", ok + "X-Partial: yes", ErrOriginMalformed, 1},
		{"framing", ok + "Transfer-Encoding: gzip\r\n\r\nhi", ErrOriginFraming, 1},
		{"nothing sent", "", ErrOriginUnreachable, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, requests := rawOrigin(t, tt.resp)
			p := newPair(t, cacheable("unused"), func(o *Options) { o.Origins[0].URL = u })
			kind := faultOf(tt.fault)
			if originFaults[kind].err != tt.fault {
				t.Fatalf("%v is not in originFaults", tt.fault)
			}
			// A cacheable request (a fill) and a bypass (a pass).
			for i, kv := range [][]string{nil, {"Cache-Control", "no-store"}} {
				r := p.get("/f", kv...)
				if r.StatusCode() != 502 || string(r.Body()) != tt.fault.Error()+"\n" {
					t.Errorf("request %d: %d %q, want 502 %q", i, r.StatusCode(), r.Body(), tt.fault.Error())
				}
				expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; detail=error")
				p.settle()
			}
			if n := requests.Load(); n != 2*tt.requests {
				t.Errorf("origin saw %d requests, want %d", n, 2*tt.requests)
			}
			for i, f := range originFaults {
				want := 0.0
				if i == kind {
					want = 2
				}
				if got := testutil.ToFloat64(p.srv.m.originErrors[i]); got != want {
					t.Errorf("strata_origin_errors_total{kind=%q} = %v, want %v", f.kind, got, want)
				}
			}
			if n := p.store.Len(); n != 0 {
				t.Errorf("stored %d entries", n)
			}
		})
	}
}

// TestOriginCause: errors no raw origin above produces. A timeout wins
// over the stage it happened in; a connection that ends before a
// response's first byte is unreachable (and retried).
func TestOriginCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{fasthttp.ErrTimeout, ErrOriginTimeout},
		{fasthttp.ErrDialTimeout, ErrOriginTimeout},
		{fmt.Errorf("error when reading response headers: %w", os.ErrDeadlineExceeded), ErrOriginTimeout},
		{io.EOF, ErrOriginUnreachable},
		{fasthttp.ErrConnectionClosed, ErrOriginUnreachable},
		{syscall.ECONNREFUSED, ErrOriginUnreachable},
		{fasthttp.ErrNoFreeConns, ErrOriginUnreachable},
	} {
		if got := originCause(tc.err); got != tc.want {
			t.Errorf("originCause(%v) = %v, want %v", tc.err, got, tc.want)
		}
		_, retry := retryOrigin(nil, 1, tc.err)
		if want := tc.want == ErrOriginUnreachable; retry != want {
			t.Errorf("retry after %v = %v, want %v", tc.err, retry, want)
		}
		if _, retry := retryOrigin(nil, 2, tc.err); retry {
			t.Errorf("retried %v twice", tc.err)
		}
	}
}

// manyHeaders is a cacheable response with n header fields of size bytes
// each (name, colon, space and value; CRLF not counted).
func manyHeaders(n, size int) string {
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 2\r\n")
	for i := range n {
		name := fmt.Sprintf("X-Meta-%03d: ", i)
		b.WriteString(name + strings.Repeat("v", size-len(name)) + "\r\n")
	}
	b.WriteString("\r\nhi")
	return b.String()
}

// TestOriginMaxHeaderBytes: a header block under OriginOptions.
// MaxHeaderBytes (default 64 KiB) is served and stored; one over it is a
// 502 header_too_large, asked for once per request.
func TestOriginMaxHeaderBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int // 0: the default
		n      int // header fields of 400 bytes
		status int
	}{
		{"20 fields, default", 0, 20, 200},
		{"150 fields, default", 0, 150, 200},
		{"170 fields, default", 0, 170, 502},
		{"20 fields, 4KiB", 4 << 10, 20, 502},
		{"9 fields, 4KiB", 4 << 10, 9, 200},
		{"20 fields, 16KiB", 16 << 10, 20, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, requests := rawOrigin(t, manyHeaders(tc.n, 400))
			p := newPair(t, cacheable("unused"), func(o *Options) {
				o.Origins[0].URL, o.Origins[0].MaxHeaderBytes = u, tc.limit
			})
			p.client.ReadBufferSize = 128 << 10
			for i := range 2 {
				r := p.get("/h")
				if r.StatusCode() != tc.status {
					t.Fatalf("request %d: %d %q, want %d", i, r.StatusCode(), r.Body(), tc.status)
				}
				p.settle()
			}
			wantRequests, wantErrors := int64(2), 2.0
			if tc.status == 200 {
				wantRequests, wantErrors = 1, 0 // the second was a hit
				last := fmt.Sprintf("X-Meta-%03d", tc.n-1)
				expectHeader(t, p.get("/h"), last, strings.Repeat("v", 400-len(last)-2))
			}
			if n := requests.Load(); n != wantRequests {
				t.Errorf("origin saw %d requests, want %d", n, wantRequests)
			}
			if got := testutil.ToFloat64(p.srv.m.originErrors[faultOf(ErrOriginHeaderTooLarge)]); got != wantErrors {
				t.Errorf("header_too_large counted %v times, want %v", got, wantErrors)
			}
		})
	}
}

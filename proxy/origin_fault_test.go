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

package proxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestOriginClosedIdleConns: an origin that closes keep-alive connections
// sooner than strata would (its idle timeout shorter than
// OriginOptions.IdleTimeout: Node's and Apache's 5 s against strata's
// 90 s) leaves the pool full of connections it has closed. A request
// after the quiet spell must not meet them: each is found closed before
// a request is written to it, and the request goes out on one that is
// open, or on a new one. Sequential requests take the connections one
// after another, so the test fails whenever two closed ones in a row are
// tried as a request's two attempts.
func TestOriginClosedIdleConns(t *testing.T) {
	const conns = 6
	var requests atomic.Int64
	var gate sync.WaitGroup
	gate.Add(conns)
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= conns {
			gate.Done()
			gate.Wait() // the first requests wait for each other: conns connections
		}
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write([]byte("body " + r.URL.Path))
	}))
	origin.Config.IdleTimeout = 100 * time.Millisecond
	origin.Start()
	t.Cleanup(origin.Close)
	p := newPair(t, cacheable("unused"), func(o *Options) { o.Origins[0].URL = origin.URL })

	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.get(fmt.Sprintf("/warm/%d", i))
			if r.StatusCode() != 200 {
				t.Errorf("warm-up %d: %d", i, r.StatusCode())
			}
		}()
	}
	wg.Wait()
	time.Sleep(400 * time.Millisecond) // the origin closes every idle connection
	for i := range 2 * conns {
		r := p.get(fmt.Sprintf("/after/%d", i))
		if r.StatusCode() != 200 || string(r.Body()) != fmt.Sprintf("body /after/%d", i) {
			t.Errorf("request %d after the quiet spell: %d %q", i, r.StatusCode(), r.Body())
		}
	}
	if n := testutil.ToFloat64(p.srv.m.originErrors[faultOf(ErrOriginUnreachable)]); n != 0 {
		t.Errorf("strata_origin_errors_total{kind=unreachable} = %v, want 0", n)
	}
}

// TestPeerClosed: a pooled connection idle for idleCheckAfter is unfit
// once its origin closed it or sent bytes unasked; one still open, one
// never read (new) and one read within idleCheckAfter are taken as they
// are, without a look at the socket.
func TestPeerClosed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		peer       func(net.Conn) // what the origin's end does while ours is idle
		idle       time.Duration  // since our last read; 0: never read
		tls        bool           // ours is seen through a tls.Conn, as for an https origin
		wantClosed bool
	}{
		{"open, idle", func(net.Conn) {}, time.Second, false, false},
		{"closed, idle", func(c net.Conn) { c.Close() }, time.Second, false, true},
		{"reset, idle", func(c net.Conn) { c.(*net.TCPConn).SetLinger(0); c.Close() }, time.Second, false, true},
		{"unasked bytes, idle", func(c net.Conn) { io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\n\r\n") }, time.Second, false, true},
		{"closed, never read", func(c net.Conn) { c.Close() }, 0, false, false},
		{"closed, read just now", func(c net.Conn) { c.Close() }, time.Millisecond, false, false},
		{"TLS, open, idle", func(net.Conn) {}, time.Second, true, false},
		{"TLS, closed, idle", func(c net.Conn) { c.Close() }, time.Second, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			peer, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			tc.peer(peer)
			time.Sleep(20 * time.Millisecond) // the FIN, RST or bytes arrive
			pc := &progressConn{Conn: c, timeout: time.Second}
			if tc.idle > 0 {
				pc.lastRead = time.Now().Add(-tc.idle)
			}
			var conn net.Conn = pc
			if tc.tls {
				conn = tls.Client(pc, &tls.Config{InsecureSkipVerify: true})
			}
			if got := peerClosed(conn); got != tc.wantClosed {
				t.Errorf("peerClosed = %v, want %v", got, tc.wantClosed)
			}
		})
	}
}

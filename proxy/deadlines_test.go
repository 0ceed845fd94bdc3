package proxy

import (
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/valyala/fasthttp"
)

// deadlineConn records the deadlines set on it.
type deadlineConn struct {
	net.Conn
	reads, writes []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error { c.reads = append(c.reads, t); return nil }
func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.writes = append(c.writes, t)
	return nil
}

// TestConnDeadlines: a deadline is armed when a connection opens, then
// moved only when the armed one is less than its timeout away, to at most
// lazy(timeout) later than wanted; closed connections are forgotten.
func TestConnDeadlines(t *testing.T) {
	const read, idle, write = 8 * time.Second, 16 * time.Second, 80 * time.Second
	type step struct {
		wait         time.Duration
		event        string // idle, write, close
		reads, write int    // deadlines set so far
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"busy connection re-arms once per lazy period", []step{
			{0, "idle", 2, 0}, {0, "write", 2, 1}, {0, "idle", 2, 1}, {0, "write", 2, 1},
			{500 * time.Millisecond, "idle", 2, 1}, {500 * time.Millisecond, "write", 2, 1},
			{time.Second, "idle", 3, 1}, {time.Second, "write", 3, 2},
		}},
		{"idle gaps re-arm", []step{
			{time.Second, "idle", 2, 0}, {3 * time.Second, "idle", 3, 0}, {3 * time.Second, "write", 3, 1},
		}},
		{"closed connection is forgotten", []step{
			{0, "idle", 2, 0}, {0, "close", 2, 0}, {5 * time.Second, "idle", 2, 0}, {0, "write", 2, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var d connDeadlines
				d.init(read, idle, write)
				c := &deadlineConn{}
				d.connState(c, fasthttp.StateNew)
				if len(c.reads) != 1 || !c.reads[0].Equal(time.Now().Add(read)) {
					t.Fatalf("new connection: read deadlines %v", c.reads)
				}
				for i, s := range tc.steps {
					time.Sleep(s.wait)
					now, nr, nw := time.Now(), len(c.reads), len(c.writes)
					switch s.event {
					case "idle":
						d.connState(c, fasthttp.StateIdle)
						checkDeadline(t, i, c.reads[nr:], now, idle)
					case "write":
						d.armWrite(c)
						checkDeadline(t, i, c.writes[nw:], now, write)
					case "close":
						d.connState(c, fasthttp.StateClosed)
					}
					if len(c.reads) != s.reads || len(c.writes) != s.write {
						t.Fatalf("step %d (%s after %v): %d read and %d write deadlines set, want %d and %d",
							i, s.event, s.wait, len(c.reads), len(c.writes), s.reads, s.write)
					}
				}
				d.connState(c, fasthttp.StateClosed)
				if n := d.open(); n != 0 {
					t.Fatalf("%d connections still tracked", n)
				}
			})
		})
	}
}

// checkDeadline fails unless a deadline set in this step is between
// now+timeout and now+timeout+lazy(timeout) (none set passes: the table
// checks the counts).
func checkDeadline(t *testing.T, step int, set []time.Time, now time.Time, timeout time.Duration) {
	t.Helper()
	if len(set) == 0 {
		return
	}
	last := set[len(set)-1]
	if last.Before(now.Add(timeout)) || last.After(now.Add(timeout+lazy(timeout))) {
		t.Fatalf("step %d: armed %v from now, want %v to %v", step, last.Sub(now), timeout, timeout+lazy(timeout))
	}
}

// TestIdleKeepAliveClosed: a keep-alive connection that sends nothing
// after a response is closed once ClientIdleTimeout (plus its lazy
// margin) has passed, not before, even though the ReadTimeout armed for its
// first request was further away; the server forgets it.
func TestIdleKeepAliveClosed(t *testing.T) {
	const idle = 200 * time.Millisecond
	p := newPair(t, cacheable("x"), func(o *Options) { o.ClientIdleTimeout = idle })
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /k HTTP/1.1\r\nHost: example.com\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil || n == 0 {
		t.Fatalf("response: %d bytes, %v", n, err)
	}
	start := time.Now()
	rest, _ := io.ReadAll(c) // until the server closes
	if took := time.Since(start); took < idle-idle/8 || took > 5*time.Second {
		t.Fatalf("closed after %v (read %q), want about %v", took, rest, idle)
	}
	for range 500 {
		if p.srv.deadlines.open() == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d connections still tracked after close", p.srv.deadlines.open())
}

// BenchmarkDeadlines: the deadline work of one keep-alive request on a
// TCP connection, as fasthttp did it (three clock reads and three deadline
// updates) and as connDeadlines does it (two table lookups), with 1,000
// other connections tracked.
func BenchmarkDeadlines(b *testing.B) {
	c := tcpConn(b)
	b.Run("fasthttp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.SetReadDeadline(time.Now().Add(DefaultClientIdleTimeout))
			_ = c.SetReadDeadline(time.Now().Add(DefaultReadTimeout))
			_ = c.SetWriteDeadline(time.Now().Add(DefaultWriteTimeout))
		}
	})
	b.Run("lazy", func(b *testing.B) {
		var d connDeadlines
		d.init(DefaultReadTimeout, DefaultClientIdleTimeout, DefaultWriteTimeout)
		d.connState(c, fasthttp.StateNew)
		for range 1000 {
			d.connState(&deadlineConn{}, fasthttp.StateNew)
		}
		b.ReportAllocs()
		for b.Loop() {
			d.connState(c, fasthttp.StateIdle)
			d.armWrite(c)
		}
	})
}

// tcpConn returns one end of a loopback TCP connection, closed at cleanup.
func tcpConn(b *testing.B) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(); s.Close() })
	return c
}

// writeConn accepts every write.
type writeConn struct{ net.Conn }

func (writeConn) Write(p []byte) (int, error) { return len(p), nil }

// TestWriteWithin: writeWithin bounds its write by its own short time and
// then puts back the write deadline armed for the response (none when no
// WriteTimeout is armed), so the response that follows keeps its time.
func TestWriteWithin(t *testing.T) {
	for _, write := range []time.Duration{80 * time.Second, 0} {
		synctest.Test(t, func(t *testing.T) {
			var d connDeadlines
			d.init(8*time.Second, 16*time.Second, write)
			c := &deadlineConn{Conn: writeConn{}}
			d.connState(c, fasthttp.StateNew)
			d.armWrite(c)
			var armed time.Time // none
			if write > 0 {
				armed = c.writes[0]
			}
			c.writes = nil
			if n, err := d.writeWithin(c, []byte("103"), time.Second); n != 3 || err != nil {
				t.Fatalf("writeWithin: %d, %v", n, err)
			}
			if len(c.writes) != 2 || !c.writes[0].Equal(time.Now().Add(time.Second)) || !c.writes[1].Equal(armed) {
				t.Fatalf("WriteTimeout %v: write deadlines %v, want now+1s then %v", write, c.writes, armed)
			}
		})
	}
}

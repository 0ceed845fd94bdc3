package main

import (
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
)

// countingConn is a net.Conn that counts RemoteAddr calls.
type countingConn struct {
	net.Conn
	raddr net.Addr
	calls int
}

func (c *countingConn) RemoteAddr() net.Addr { c.calls++; return c.raddr }
func (c *countingConn) LocalAddr() net.Addr  { return c.raddr }

// TestConnAddrsOncePerConnection: a connection's address is read from it
// once, then from the table, and comes out the same; an address with a
// zone is read every time.
func TestConnAddrsOncePerConnection(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		wantCalls int
	}{
		{"192.0.2.7", 1},
		{"::ffff:192.0.2.8", 1},
		{"2001:db8::1", 1},
		{"fe80::1%eth0", 3},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			want := netip.MustParseAddr(tc.addr)
			conn := &countingConn{raddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(want, 1234))}
			var ctx fasthttp.RequestCtx
			ctx.Init2(conn, nil, true)
			var c connAddrs
			for range 3 {
				if got := c.remote(&ctx); got.Unmap() != want.Unmap() || got.Zone() != want.Zone() {
					t.Fatalf("remote %v, want %v", got, want)
				}
			}
			if conn.calls != tc.wantCalls {
				t.Errorf("RemoteAddr read %d times in 3 requests, want %d", conn.calls, tc.wantCalls)
			}
		})
	}
}

// TestConnAddrsSharedSlots: a connection whose slot another took over
// misses instead of getting the other's address; under concurrent use
// (run with -race) every hit is the address put for that id.
func TestConnAddrsSharedSlots(t *testing.T) {
	var c connAddrs
	addr := func(id uint64) netip.Addr {
		return netip.AddrFrom4([4]byte{10, byte(id >> 16), byte(id >> 8), byte(id)})
	}
	c.put(5, addr(5))
	c.put(5+connAddrSlots, addr(5+connAddrSlots))
	if a, ok := c.get(5); ok {
		t.Errorf("id 5 found %v after its slot was taken over", a)
	}
	if a, ok := c.get(5 + connAddrSlots); !ok || a.Unmap() != addr(5+connAddrSlots) {
		t.Errorf("the slot's new owner got %v, %v", a, ok)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20000 {
				id := uint64(1 + (i*7+g)%8*connAddrSlots) // eight ids on one slot
				if a, ok := c.get(id); ok && a.Unmap() != addr(id) {
					t.Errorf("id %d got %v, want %v", id, a, addr(id))
					return
				}
				c.put(id, addr(id))
			}
		}()
	}
	wg.Wait()
}

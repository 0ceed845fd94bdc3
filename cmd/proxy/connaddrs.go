package main

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// connAddrSlots is the size of connAddrs' table: a power of two. More
// connections than this at once only share slots (and miss more).
const connAddrSlots = 1024

// connAddrs remembers each client connection's address by fasthttp's
// ConnID, for the access log. Reading it from the connection at every
// request follows a chain of pointers (the net.Conn, its netFD, the
// TCPAddr, its IP) made when the connection was accepted, which later
// requests find cold: in the CPU profile of 1 KiB hits it cost as much as
// formatting the whole line. The table is direct-mapped (a connection's
// slot is its id modulo the size; a newer connection takes the slot over)
// and each slot is a sequence lock over atomics: any goroutine may read
// or fill any slot without a mutex and without a data race, and a read
// that overlaps a write misses. IPv6 addresses with a zone are not kept.
type connAddrs struct {
	slots [connAddrSlots]connAddr
}

type connAddr struct {
	seq    atomic.Uint64 // odd while a write is in progress
	id     atomic.Uint64 // the connection's id; 0: none
	hi, lo atomic.Uint64 // its address, as 16 bytes (IPv4 mapped)
}

// remote returns the client address of ctx's connection (the zero Addr if
// it is not TCP), from the table when it holds it.
func (c *connAddrs) remote(ctx *fasthttp.RequestCtx) netip.Addr {
	id := ctx.ConnID()
	if a, ok := c.get(id); ok {
		return a
	}
	tcp, ok := ctx.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	a := tcp.AddrPort().Addr()
	c.put(id, a)
	return a
}

func (c *connAddrs) get(id uint64) (netip.Addr, bool) {
	s := &c.slots[id%connAddrSlots]
	q := s.seq.Load()
	if id == 0 || q&1 != 0 || s.id.Load() != id {
		return netip.Addr{}, false
	}
	hi, lo := s.hi.Load(), s.lo.Load()
	if s.seq.Load() != q {
		return netip.Addr{}, false
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	return netip.AddrFrom16(b), true
}

func (c *connAddrs) put(id uint64, a netip.Addr) {
	if id == 0 || !a.IsValid() || a.Zone() != "" {
		return
	}
	s := &c.slots[id%connAddrSlots]
	q := s.seq.Load()
	if q&1 != 0 || !s.seq.CompareAndSwap(q, q+1) {
		return // another goroutine is writing the slot: leave it to it
	}
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	s.id.Store(id)
	s.hi.Store(hi)
	s.lo.Store(lo)
	s.seq.Store(q + 2)
}

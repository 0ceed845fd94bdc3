package disk

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"strata/blockdev"
)

// bufPool keeps aligned read buffers in size classes of 1 to 8 blocks,
// then four per power of two (8·2^k blocks × 1.25, 1.5, 1.75, 2), so a
// buffer wastes at most a quarter of what it holds: a 256 KiB value with
// its key and header takes a 320 KiB buffer, where a power of two took
// 512 KiB, and the reads in flight that ReadBufferBytes holds are 1.6
// times as many. Buffers above poolMax are not kept. poolMax must hold a
// whole slice entry: the proxy's 1MiB slices plus their key and header
// take the 1.25 MiB class, and when a slice's class was not kept every
// disk read of a slice allocated one (5.3GB in 8s of a load test serving
// large objects as slices from disk, and an OOM kill in a 192MiB cgroup).
//
// Every buffer carries a generation, odd while it is out of the pool:
// get makes it odd, a return makes it even again, and only a return that
// names the generation its holder was given is taken (putGen). A buffer
// lent to a Value (Engine.Lend) goes back when the Value is released,
// possibly long after the read and after Close; a second Release of the
// same lease, or one of a Value copied by mistake, names a generation
// that is gone and is refused (counted in Stats.BadReleases; a panic
// under -tags invariants), so the pool never holds a buffer twice nor
// hands out one that is still lent. The buffers are ordinary heap
// memory: one never returned is only garbage, counted in out until then.
type bufPool struct {
	bs    int
	pools [64]sync.Pool
	out   atomic.Int64  // buffers handed out and not yet returned
	bad   atomic.Uint64 // returns refused: not the holder's generation
}

type aligned struct {
	b   []byte
	gen atomic.Uint64 // odd while out of the pool
}

const poolMax = 4 << 20

// class returns the index of the smallest class that holds n bytes.
func (p *bufPool) class(n int) int {
	b := max((n+p.bs-1)/p.bs, 1) // blocks
	if b <= 8 {
		return b - 1
	}
	o := bits.Len(uint(b-1)) - 1 // 8·2^(o-3) < b ≤ 8·2^(o-2)
	step := 1 << (o - 2)
	m := (b - 1<<o + step - 1) / step // 1..4 quarters above 2^o
	return 8 + 4*(o-3) + m - 1
}

// size returns the bytes of class k.
func (p *bufPool) size(k int) int {
	if k < 8 {
		return (k + 1) * p.bs
	}
	o, m := (k-8)/4+3, (k-8)%4+1
	return (1<<o + m<<(o-2)) * p.bs
}

// get returns a buffer of at least n bytes, its own until put.
func (p *bufPool) get(n int) *aligned {
	p.out.Add(1)
	k := p.class(n)
	var a *aligned
	if k < len(p.pools) {
		if x := p.pools[k].Get(); x != nil {
			a = x.(*aligned)
		}
	}
	if a == nil {
		a = &aligned{b: blockdev.AlignedBuffer(p.size(k), p.bs)}
	}
	a.gen.Add(1)
	return a
}

// put gives back a buffer taken with get by the caller itself.
func (p *bufPool) put(a *aligned) { p.putGen(a, a.gen.Load()) }

// putGen gives back a, which its holder got at generation gen (odd);
// a return of another generation is refused (see bufPool).
func (p *bufPool) putGen(a *aligned, gen uint64) {
	if gen&1 == 0 || !a.gen.CompareAndSwap(gen, gen+1) {
		p.bad.Add(1)
		if invariants {
			panic(fmt.Sprintf("disk: read buffer returned twice (generation %d, now %d)", gen, a.gen.Load()))
		}
		return
	}
	p.out.Add(-1)
	if k := p.class(len(a.b)); len(a.b) <= poolMax && k < len(p.pools) {
		p.pools[k].Put(a)
	}
}

package disk

import (
	"fmt"
	"sync"
	"sync/atomic"

	"strata/blockdev"
)

// bufPool keeps aligned read buffers in power-of-two size classes from
// one block up. Buffers above poolMax are not kept. poolMax must hold
// a whole slice entry: the proxy's 1MiB slices plus their key and header
// round up to the 2MiB class, and when that class was not kept every disk
// read of a slice allocated 2MiB (5.3GB in 8s of a load test serving large
// objects as slices from disk, and an OOM kill in a 192MiB cgroup).
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
	pools [24]sync.Pool
	out   atomic.Int64  // buffers handed out and not yet returned
	bad   atomic.Uint64 // returns refused: not the holder's generation
}

type aligned struct {
	b   []byte
	gen atomic.Uint64 // odd while out of the pool
}

const poolMax = 4 << 20

func (p *bufPool) class(n int) int {
	k := 0
	for p.bs<<k < n {
		k++
	}
	return k
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
		a = &aligned{b: blockdev.AlignedBuffer(p.bs<<k, p.bs)}
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

package proxy

import (
	"sync"

	"github.com/valyala/fasthttp"

	"strata/hybrid"
)

// bodyLease keeps the store's Value behind a hit's inline body (borrowed
// from the memory tier's arena, hybrid.Value.Lent, or the disk engine's
// read buffer on a disk hit) until fasthttp has written the response, which
// takes the body with SetBodyRaw: no copy, and the status line, headers and
// body leave in one writev (a body stream cost a second write per hit: 22%
// more system CPU per 256 KiB hit). fasthttp has no hook on a raw body; the
// lease rides on the request as a user value, which fasthttp closes when it
// resets the request: after the response is written and flushed, or when
// the connection ends (a client gone mid-body, a write error, shutdown).
// TestLentBodyClientGone holds fasthttp to that order. Close releases the
// Value's pin, so that a lent entry evicted meanwhile is freed then, or
// gives its read buffer back to the disk engine's pool.
// Pooled with the Value's buffer.
type bodyLease struct{ v hybrid.Value }

var bodyLeasePool = sync.Pool{New: func() any { return new(bodyLease) }}

// bodyLeaseKey is the user value key of a request's bodyLease.
const bodyLeaseKey = "strata.bodyLease"

// maxPooledValue bounds the copy buffers a pooled bodyLease keeps (small
// memory hits' and pending disk hits'; lent values need none): larger ones
// are left to the collector.
const maxPooledValue = 2 << 20

// setLentBody sets body, which v holds, as resp's body without a copy and
// moves v into a lease on ctx; v is left with a released Value.
func setLentBody(ctx *fasthttp.RequestCtx, v *hybrid.Value, body []byte) {
	l := bodyLeasePool.Get().(*bodyLease)
	l.v.Swap(v)
	ctx.Response.SetBodyRaw(body)
	// fasthttp overwrites a user value without closing it: a lease set
	// before on this request would keep its pin for good.
	if old, ok := ctx.UserValue(bodyLeaseKey).(*bodyLease); ok {
		_ = old.Close()
	}
	ctx.SetUserValue(bodyLeaseKey, l)
}

// Close releases the Value and pools l. fasthttp calls it once, when it
// resets the request.
func (l *bodyLease) Close() error {
	l.v.Release()
	l.v.Trim(maxPooledValue)
	bodyLeasePool.Put(l)
	return nil
}

package proxy

import (
	"io"
	"sync"

	"strata/hybrid"
)

// lentBody is the body stream of a hit whose inline body is still in the
// store's Value: borrowed from the memory tier's arena (hybrid.Value.Lent)
// or copied there by the store (a disk hit). The response writes it from
// there (WriteTo: one Write of the whole body, which fasthttp's bufio.Writer
// passes to the socket without a copy once its buffer is flushed), and
// fasthttp calls Close once the response is written, or abandoned (a client
// gone mid-body, a connection closed before the write, a response reset):
// Close releases the Value's pin, so that a lent entry evicted meanwhile is
// freed then. Pooled with the Value's buffer.
type lentBody struct {
	v    hybrid.Value
	rest []byte // bytes not yet written
}

var lentBodyPool = sync.Pool{New: func() any { return new(lentBody) }}

// maxPooledValue bounds the copy buffers a pooled lentBody keeps (a disk
// hit's; lent values need none): larger ones are left to the collector.
const maxPooledValue = 2 << 20

// lendBody moves v (which holds body) into a pooled lentBody and returns
// it; v is left with that body's previous, released Value.
func lendBody(v *hybrid.Value, body []byte) *lentBody {
	b := lentBodyPool.Get().(*lentBody)
	b.v.Swap(v)
	b.rest = body
	return b
}

func (b *lentBody) Read(p []byte) (int, error) {
	if len(b.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

// WriteTo writes what is left in one Write.
func (b *lentBody) WriteTo(w io.Writer) (int64, error) {
	if len(b.rest) == 0 {
		return 0, nil
	}
	n, err := w.Write(b.rest)
	b.rest = b.rest[n:]
	return int64(n), err
}

// SupportsBodyWriteTo tells fasthttp that WriteTo may replace Read.
func (b *lentBody) SupportsBodyWriteTo() bool { return true }

// Close releases the Value and pools b. fasthttp calls it exactly once.
func (b *lentBody) Close() error {
	b.rest = nil
	b.v.Release()
	b.v.Trim(maxPooledValue)
	lentBodyPool.Put(b)
	return nil
}

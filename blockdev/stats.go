package blockdev

import (
	"sync/atomic"
	"time"
)

// counters records I/O statistics; every Device here embeds one. The
// counters are plain atomics: one device sees at most a few hundred thousand
// ops per second, far below where striping would pay.
type counters struct {
	reads, writes         atomic.Uint64
	readBytes, writeBytes atomic.Uint64
	readNanos, writeNanos atomic.Uint64
	syncs, errors         atomic.Uint64
}

// monoBase anchors monoNow: time.Since on a time with a monotonic reading
// costs one clock read, where time.Now costs two (wall and monotonic).
var monoBase = time.Now()

// monoNow is monotonic nanoseconds since the package was loaded.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// read records a successful read of n bytes that began at monoNow() start.
func (c *counters) read(n int, start int64) {
	c.reads.Add(1)
	c.readBytes.Add(uint64(n))
	c.readNanos.Add(uint64(monoNow() - start))
}

// write records a successful write of n bytes that began at start.
func (c *counters) write(n int, start int64) {
	c.writes.Add(1)
	c.writeBytes.Add(uint64(n))
	c.writeNanos.Add(uint64(monoNow() - start))
}

func (c *counters) snapshot() Stats {
	return Stats{
		Reads:      c.reads.Load(),
		Writes:     c.writes.Load(),
		ReadBytes:  c.readBytes.Load(),
		WriteBytes: c.writeBytes.Load(),
		ReadNanos:  c.readNanos.Load(),
		WriteNanos: c.writeNanos.Load(),
		Syncs:      c.syncs.Load(),
		Errors:     c.errors.Load(),
	}
}

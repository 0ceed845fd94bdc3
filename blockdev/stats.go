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

func (c *counters) read(n int, start time.Time) {
	c.reads.Add(1)
	c.readBytes.Add(uint64(n))
	c.readNanos.Add(uint64(time.Since(start)))
}

func (c *counters) write(n int, start time.Time) {
	c.writes.Add(1)
	c.writeBytes.Add(uint64(n))
	c.writeNanos.Add(uint64(time.Since(start)))
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

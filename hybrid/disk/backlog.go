package disk

import "math"

// WriteRoom is how many more bytes of entries the write queue takes before
// an insert is dropped for it (QueueBytes minus what is queued); a writer
// that can wait (a fill streaming a large object) paces itself on it
// instead of having its entries dropped. A disk out of service has
// unbounded room: its inserts are dropped whatever the queue holds, and
// nobody should wait for it.
func (e *Engine) WriteRoom() int64 {
	if e.health.down() {
		return math.MaxInt64
	}
	return e.opts.QueueBytes - e.queued.Load()
}

// WriteQueueBytes is the write queue's bound, QueueBytes.
func (e *Engine) WriteQueueBytes() int64 { return e.opts.QueueBytes }

// FillRoom is how many more bytes of entries the write queue takes while
// the flushers still count as keeping up (under FillQueueBytes), as
// Filling asks to admit past the steady rate; like WriteRoom, unbounded
// for a disk out of service. A writer that paces itself on WriteRoom
// alone keeps the queue between half and full, where admission falls
// back on its rate and drops what the device had the bandwidth to write.
func (e *Engine) FillRoom() int64 {
	if e.health.down() {
		return math.MaxInt64
	}
	return e.FillQueueBytes() - e.queued.Load()
}

// FillQueueBytes is the queue depth below which the flushers count as
// keeping up (Filling): half of QueueBytes.
func (e *Engine) FillQueueBytes() int64 { return e.opts.QueueBytes / 2 }

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

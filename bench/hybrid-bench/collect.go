package main

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms have foyer-bench's bounds, so that quantisation (and
// so every printed latency) matches: 1 µs to 10 s, 2 significant digits.
const (
	histMinMicros = 1
	histMaxMicros = 10_000_000
	histSigFigs   = 2
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
}

// recordMicros records d in whole microseconds (truncated, as foyer's
// as_micros), clamped to the histogram's range.
func recordMicros(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), 0), histMaxMicros)
	_ = h.RecordValue(us) // cannot fail: us is in range
}

// part is what one worker did during one epoch. The worker owns it alone
// until it hands it to the epoch; the reporter owns it after.
type part struct {
	inserts, insertBytes  uint64
	gets, misses, hitByte uint64
	errors, corrupt       uint64
	insertLat             *hdrhistogram.Histogram
	hitLat, missLat       *hdrhistogram.Histogram
}

func newPart() *part {
	return &part{insertLat: newHist(), hitLat: newHist(), missLat: newHist()}
}

// add merges o into p.
func (p *part) add(o *part) {
	p.inserts += o.inserts
	p.insertBytes += o.insertBytes
	p.gets += o.gets
	p.misses += o.misses
	p.hitByte += o.hitByte
	p.errors += o.errors
	p.corrupt += o.corrupt
	p.insertLat.Merge(o.insertLat)
	p.hitLat.Merge(o.hitLat)
	p.missLat.Merge(o.missLat)
}

// epoch is one span of the run between two reports. Workers record into
// their own part with no lock and no shared write; when the reporter ends
// the epoch (closes due), each worker notices at its next loop turn (or in
// its pacing sleep), sends its part on parts and starts a fresh one for
// next. next and stop are written before due is closed and read after.
//
// This keeps the hot path to one non-blocking channel poll per operation,
// where a shared histogram (foyer-bench's RwLock) or a per-worker mutex
// would put a lock on it.
type epoch struct {
	due   chan struct{}
	parts chan *part // buffered: one slot per worker, so sends never block
	next  *epoch
	stop  bool
}

func newEpoch(workers int) *epoch {
	return &epoch{due: make(chan struct{}), parts: make(chan *part, workers)}
}

// collector is the reporter's side of the epochs.
type collector struct {
	workers int
	cur     *epoch
}

func newCollector(workers int) *collector {
	return &collector{workers: workers, cur: newEpoch(workers)}
}

// end closes the current epoch (the last one if stop), waits for every
// worker's part of it and returns them merged.
func (c *collector) end(stop bool) *part {
	old := c.cur
	c.cur = newEpoch(c.workers)
	old.next, old.stop = c.cur, stop
	close(old.due)
	sum := newPart()
	for range c.workers {
		sum.add(<-old.parts)
	}
	return sum
}

// recorder is a worker's side: its epoch and its current part.
type recorder struct {
	ep *epoch
	p  *part
}

func newRecorder(ep *epoch) recorder { return recorder{ep: ep, p: newPart()} }

// poll hands the part over if the epoch ended, and says whether the
// worker must stop.
func (r *recorder) poll() (stop bool) {
	for {
		select {
		case <-r.ep.due:
			r.ep.parts <- r.p
			r.p = newPart()
			if r.ep.stop {
				return true
			}
			r.ep = r.ep.next
		default:
			return false
		}
	}
}

// sleep waits d, or less if the epoch ends first.
func (r *recorder) sleep(t *time.Timer, d time.Duration) {
	t.Reset(d)
	select {
	case <-t.C:
	case <-r.ep.due:
		t.Stop()
	}
}

package accesslog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	lineBytes     = 256      // a typical line, for sizing from BufferLines
	maxBatchBytes = 32 << 10 // lines handed to the writer at once, at most
	minBatchBytes = 512      // ... and at least
	stackLine     = 512      // lines up to this long are formatted on the stack
	flushEvery    = 100 * time.Millisecond
	clockEvery    = 10 * time.Millisecond // how stale a line's coarse time may be
	errorLogEvery = 10 * time.Second
)

// Log is an open access log; see the package comment.
//
// Lines are appended, under mu, to a batch buffer in the order their
// Writes took mu. A batch that reaches batchBytes is handed to the writer
// through full (bounded: when it is full the batch's lines are dropped and
// counted); the writer also takes whatever is buffered every flushEvery,
// and before a reopen or close. Handing lines over a batch at a time, not
// one by one, spares a request the channel operations and the writer's
// wake-up per line (a 1 KiB hit paid 13% of its req/s for them).
type Log struct {
	opts       Options
	json       bool // format: AppendJSON, else AppendCombined (static calls: e does not escape)
	batchBytes int

	mu     sync.Mutex
	buf    []byte     // lines not yet handed over
	nbuf   int        // lines in buf
	full   chan batch // batches for the writer; sends only under mu
	spare  chan []byte
	closed bool         // under mu
	sec    atomic.Int64 // unix seconds, every clockEvery: the time of a line without one

	reopen    chan chan struct{}
	stop      chan struct{}
	done      chan struct{} // the writer has stopped
	clockDone chan struct{} // ... and so has the clock
	m         metrics

	// Owned by the writer goroutine.
	out     io.Writer
	file    *os.File // nil for stdout
	lastErr time.Time
	pending []batch
}

// batch is lines handed to the writer.
type batch struct {
	b []byte
	n int
}

type metrics struct {
	written, dropped, errors prometheus.Counter
}

// Open opens opts.Path and starts the writer.
func Open(opts Options) (*Log, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	budget := opts.BufferLines * lineBytes
	bb := min(max(budget/32, minBatchBytes), maxBatchBytes)
	nb := max(2, budget/bb)
	l := &Log{opts: opts, json: opts.Format == FormatJSON, batchBytes: bb,
		buf: make([]byte, 0, bb+stackLine), full: make(chan batch, nb), spare: make(chan []byte, nb+1),
		reopen: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		clockDone: make(chan struct{})}
	if err := l.newMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	l.sec.Store(time.Now().Unix())
	go l.run()
	go l.tick()
	return l, nil
}

// tick keeps the coarse clock. It is not the writer's job: a write that
// blocks on a slow disk would leave every line meanwhile with a stale
// time. It stops when the writer does.
func (l *Log) tick() {
	defer close(l.clockDone)
	clock := time.NewTicker(clockEvery)
	defer clock.Stop()
	for {
		select {
		case now := <-clock.C:
			l.sec.Store(now.Unix())
		case <-l.done:
			return
		}
	}
}

func (l *Log) newMetrics(reg prometheus.Registerer) error {
	l.m = metrics{
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_access_log_lines_total",
			Help: "Access log lines handed to the file."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_access_log_dropped_lines_total",
			Help: "Access log lines dropped because the write queue was full (the disk could not keep up) or the log was closed."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_access_log_write_errors_total",
			Help: "Failed writes to the access log file; the lines in them are lost."}),
	}
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{l.m.written, l.m.dropped, l.m.errors} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("accesslog: metrics: %w", err)
		}
	}
	return nil
}

// open opens Path (or takes Stdout) as l.out.
func (l *Log) open() error {
	if l.opts.Path == "-" {
		l.out = l.opts.Stdout
		if l.out == nil {
			l.out = os.Stdout
		}
		return nil
	}
	f, err := os.OpenFile(l.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("accesslog: %w", err)
	}
	l.out, l.file = f, f
	return nil
}

// Timed reports whether the format shows more of a line's time than its
// second (json: milliseconds, and the duration). When it does not, a
// caller may leave Entry.Time zero and Duration unset, and read no clock.
func (l *Log) Timed() bool { return l.json }

// Write formats e and queues the line; it never blocks on the output. A
// full queue, or a closed Log, drops the line and counts it. A zero
// e.Time is set to the Log's coarse clock (the current second, at most
// clockEvery behind).
func (l *Log) Write(e *Entry) {
	if e.Time.IsZero() {
		e.Time = time.Unix(l.sec.Load(), 0)
	}
	var sb [stackLine]byte
	var line []byte
	if l.json {
		line = AppendJSON(sb[:0], e)
	} else {
		line = AppendCombined(sb[:0], e)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.m.dropped.Inc()
		return
	}
	l.buf = append(l.buf, line...)
	l.nbuf++
	if len(l.buf) >= l.batchBytes {
		l.handOver()
	}
	l.mu.Unlock()
}

// handOver sends the buffered lines to the writer, or drops them if its
// queue is full. REQUIRES: mu held, lines buffered.
func (l *Log) handOver() {
	select {
	case l.full <- batch{l.buf, l.nbuf}:
		select {
		case b := <-l.spare:
			l.buf = b[:0]
		default:
			l.buf = make([]byte, 0, l.batchBytes+stackLine)
		}
	default:
		l.m.dropped.Add(float64(l.nbuf))
		l.buf = l.buf[:0]
	}
	l.nbuf = 0
}

// Reopen asks the writer to reopen Path (after a rotation moved it):
// lines written before Reopen was called go to the old file, lines
// written after it returns to the new one. It waits for the writer (so
// it is for a signal handler's goroutine, not a request's). Without a
// file (Path "-") the writer ignores it.
func (l *Log) Reopen() {
	ack := make(chan struct{})
	select {
	case l.reopen <- ack:
		<-ack
	case <-l.stop:
	case <-l.done: // the writer stopped after a panic
	}
}

// Close stops the writer once it has written the queued lines, and
// closes the file. It returns ctx.Err() if ctx ends first (the writer
// then stops after its current write).
func (l *Log) Close(ctx context.Context) error {
	l.mu.Lock()
	was := l.closed
	l.closed = true
	l.mu.Unlock()
	if was {
		<-l.done
		<-l.clockDone
		return nil
	}
	close(l.stop)
	select {
	case <-l.done:
		<-l.clockDone
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the writer goroutine.
func (l *Log) run() {
	defer close(l.done)
	defer func() {
		if r := recover(); r != nil {
			l.opts.Logger.Error("accesslog: writer panicked; access logging stops", "panic", r, "stack", string(debug.Stack()))
			l.mu.Lock()
			l.closed = true
			l.mu.Unlock()
			l.closeFile()
		}
	}()
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case b := <-l.full:
			l.write(b)
		case <-t.C:
			l.writeBuffered()
		case ack := <-l.reopen:
			l.writeBuffered()
			l.doReopen()
			close(ack)
		case <-l.stop:
			l.writeBuffered()
			l.closeFile()
			return
		}
	}
}

// writeBuffered writes, in order, the batches queued and the lines
// buffered. Taking both under mu keeps the order: batches are sent only
// under mu, so none can slip in between.
func (l *Log) writeBuffered() {
	l.mu.Lock()
drain:
	for {
		select {
		case b := <-l.full:
			l.pending = append(l.pending, b)
		default:
			break drain
		}
	}
	if l.nbuf > 0 {
		l.pending = append(l.pending, batch{l.buf, l.nbuf})
		select {
		case b := <-l.spare:
			l.buf = b[:0]
		default:
			l.buf = make([]byte, 0, l.batchBytes+stackLine)
		}
		l.nbuf = 0
	}
	l.mu.Unlock()
	for i, b := range l.pending {
		l.write(b)
		l.pending[i] = batch{}
	}
	l.pending = l.pending[:0]
}

// write writes one batch and gives its buffer back.
func (l *Log) write(b batch) {
	if _, err := l.out.Write(b.b); err != nil {
		l.writeFailed(err)
	} else {
		l.m.written.Add(float64(b.n))
	}
	if cap(b.b) <= l.batchBytes+stackLine {
		select {
		case l.spare <- b.b[:0]:
		default:
		}
	}
}

// writeFailed counts a failed write and logs it at most every
// errorLogEvery.
func (l *Log) writeFailed(err error) {
	l.m.errors.Inc()
	if now := time.Now(); now.Sub(l.lastErr) >= errorLogEvery {
		l.lastErr = now
		l.opts.Logger.Error("accesslog: write failed; lines lost", "path", l.opts.Path, "err", err)
	}
}

func (l *Log) doReopen() {
	if l.file == nil {
		return
	}
	old := l.file
	if err := l.open(); err != nil {
		l.opts.Logger.Error("accesslog: reopen failed; writing on to the old file", "path", l.opts.Path, "err", err)
		return
	}
	if err := old.Close(); err != nil {
		l.opts.Logger.Warn("accesslog: closing the old file", "err", err)
	}
	l.opts.Logger.Info("accesslog: reopened", "path", l.opts.Path)
}

func (l *Log) closeFile() {
	if l.file != nil {
		_ = l.file.Close()
		l.file = nil
	}
}

func joinErrs(errs []error) error { return errors.Join(errs...) }

package accesslog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	writeBufferBytes = 64 << 10
	flushEvery       = 100 * time.Millisecond
	maxPooledLine    = 16 << 10 // longer line buffers are not kept for reuse
	errorLogEvery    = 10 * time.Second
)

// Log is an open access log; see the package comment.
type Log struct {
	opts   Options
	json   bool         // format: AppendJSON, else AppendCombined (static calls: e does not escape)
	lines  chan *[]byte // nil: reopen (Reopen)
	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool
	free   chan *[]byte // line buffers to reuse: a bounded free list (not a sync.Pool, which GC empties)
	m      metrics

	// Owned by the writer goroutine.
	out     io.Writer
	file    *os.File // nil for stdout
	bw      *bufio.Writer
	lastErr time.Time
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
	l := &Log{opts: opts, json: opts.Format == FormatJSON, lines: make(chan *[]byte, opts.BufferLines),
		free: make(chan *[]byte, opts.BufferLines), stop: make(chan struct{}), done: make(chan struct{})}
	if err := l.newMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	l.bw = bufio.NewWriterSize(l.out, writeBufferBytes)
	go l.run()
	return l, nil
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

// Write formats e and queues the line; it never blocks. A full queue, or
// a closed Log, drops the line and counts it.
func (l *Log) Write(e *Entry) {
	if l.closed.Load() {
		l.m.dropped.Inc()
		return
	}
	var bp *[]byte
	select {
	case bp = <-l.free:
	default:
		b := make([]byte, 0, 512)
		bp = &b
	}
	if l.json {
		*bp = AppendJSON((*bp)[:0], e)
	} else {
		*bp = AppendCombined((*bp)[:0], e)
	}
	select {
	case l.lines <- bp:
	default:
		l.m.dropped.Inc()
		l.put(bp)
	}
}

func (l *Log) put(bp *[]byte) {
	if cap(*bp) > maxPooledLine {
		return
	}
	select {
	case l.free <- bp:
	default:
	}
}

// Reopen asks the writer to reopen Path (after a rotation moved it):
// lines written before Reopen was called go to the old file, lines
// written after it returns to the new one. It queues the request behind
// the lines already queued, waiting for room if the queue is full (so it
// is for a signal handler's goroutine, not a request's). Without a file
// (Path "-") the writer ignores it.
func (l *Log) Reopen() {
	select {
	case l.lines <- nil:
	case <-l.stop:
	case <-l.done: // the writer stopped after a panic
	}
}

// Close stops the writer once it has written the queued lines, and
// closes the file. It returns ctx.Err() if ctx ends first (the writer
// then stops after its current write).
func (l *Log) Close(ctx context.Context) error {
	if l.closed.Swap(true) {
		<-l.done
		return nil
	}
	close(l.stop)
	select {
	case <-l.done:
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
			l.closed.Store(true)
			l.closeFile()
		}
	}()
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case bp := <-l.lines:
			l.writeLine(bp)
		case <-t.C:
			l.flush()
		case <-l.stop:
			l.drain()
			l.flush()
			l.closeFile()
			return
		}
	}
}

func (l *Log) writeLine(bp *[]byte) {
	if bp == nil {
		l.doReopen()
		return
	}
	if _, err := l.bw.Write(*bp); err != nil {
		l.writeFailed(err)
	} else {
		l.m.written.Inc()
	}
	l.put(bp)
}

// drain writes what is queued, without waiting for more.
func (l *Log) drain() {
	for {
		select {
		case bp := <-l.lines:
			l.writeLine(bp)
		default:
			return
		}
	}
}

func (l *Log) flush() {
	if l.bw.Buffered() == 0 {
		return
	}
	if err := l.bw.Flush(); err != nil {
		l.writeFailed(err)
	}
}

// writeFailed counts a failed write and logs it at most every
// errorLogEvery; the buffered writer is reset so the log goes on.
func (l *Log) writeFailed(err error) {
	l.m.errors.Inc()
	l.bw.Reset(l.out)
	if now := time.Now(); now.Sub(l.lastErr) >= errorLogEvery {
		l.lastErr = now
		l.opts.Logger.Error("accesslog: write failed; lines lost", "path", l.opts.Path, "err", err)
	}
}

func (l *Log) doReopen() {
	if l.file == nil {
		return
	}
	l.flush()
	old := l.file
	if err := l.open(); err != nil {
		l.opts.Logger.Error("accesslog: reopen failed; writing on to the old file", "path", l.opts.Path, "err", err)
		return
	}
	l.bw.Reset(l.out)
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

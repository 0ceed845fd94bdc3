package accesslog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	lineBytes     = 256 // a typical line, for sizing from BufferLines
	stackLine     = 512 // lines up to this long are formatted in place (shard.go)
	flushEvery    = 100 * time.Millisecond
	clockEvery    = 100 * time.Millisecond // the coarse clock's longest sleep
	errorLogEvery = 10 * time.Second
)

// Log is an open access log; see the package comment and, for how lines
// are buffered, shard.go.
type Log struct {
	opts Options
	json bool // format: AppendJSON, else AppendCombined (static calls: e does not escape)
	buffers

	wake      chan struct{} // the chunks free ran low
	sec       atomic.Int64  // unix seconds, every clockEvery: the time of a line without one
	reopen    chan chan struct{}
	stop      chan struct{}
	done      chan struct{} // the writer has stopped
	clockDone chan struct{} // ... and so has the clock
	m         metrics

	// Owned by the writer goroutine.
	out     io.Writer
	file    *os.File // nil for stdout
	offset  int64    // file's size after the last write; -1: unknown (write all)
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
	l := &Log{opts: opts, json: opts.Format == FormatJSON, wake: make(chan struct{}, 1), reopen: make(chan chan struct{}), stop: make(chan struct{}),
		done: make(chan struct{}), clockDone: make(chan struct{})}
	if err := l.newMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	l.buffers.init(opts.BufferLines*lineBytes, runtime.GOMAXPROCS(0))
	l.wakeup = func() {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	l.sec.Store(time.Now().Unix())
	go l.run()
	go l.tick()
	return l, nil
}

// tick keeps the coarse clock: it wakes as each second starts (and every
// clockEvery besides, so that a step of the wall clock shows soon), not
// every few milliseconds. It is not the writer's job: a write that blocks
// on a slow disk would leave every line meanwhile with a stale time. It
// stops when the writer does.
func (l *Log) tick() {
	defer close(l.clockDone)
	t := time.NewTimer(nextTick(time.Now()))
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			l.sec.Store(now.Unix())
			t.Reset(nextTick(now))
		case <-l.done:
			return
		}
	}
}

// nextTick is how long after now the coarse clock next wakes: at the
// start of the next second, or after clockEvery if that is sooner.
func nextTick(now time.Time) time.Duration {
	return min(time.Second-time.Duration(now.Nanosecond()), clockEvery)
}

func (l *Log) newMetrics(reg prometheus.Registerer) error {
	l.m = metrics{
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_access_log_lines_total",
			Help: "Access log lines handed to the file."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_access_log_dropped_lines_total",
			Help: "Access log lines dropped because no buffer was free (the writer, or the disk under it, could not keep up) or the log was closed."}),
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
		l.out, l.offset = l.opts.Stdout, -1
		if l.out == nil {
			l.out = os.Stdout
		}
		return nil
	}
	f, err := os.OpenFile(l.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("accesslog: %w", err)
	}
	l.out, l.file, l.offset = f, f, fileEnd(f)
	return nil
}

// fileEnd is f's size (where O_APPEND writes next), or -1 if that cannot
// be told (a pipe or a character device given as Path).
func fileEnd(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	return fi.Size()
}

// Timed reports whether the format shows more of a line's time than its
// second (json: milliseconds, and the duration). When it does not, a
// caller may take Entry.Time from Second as the request arrives, leave
// Duration unset, and read no clock.
func (l *Log) Timed() bool { return l.json }

// Second returns the Log's coarse clock: the current second, at most
// clockEvery behind.
func (l *Log) Second() time.Time { return time.Unix(l.sec.Load(), 0) }

// Write formats e and buffers the line; it never blocks on the output. A
// full buffer, or a closed Log, drops the line and counts it. A zero
// e.Time is set to the Log's coarse clock (the current second, at most
// clockEvery behind). Lines reach the output in the order of their Writes.
func (l *Log) Write(e *Entry) {
	if e.Time.IsZero() {
		e.Time = l.Second()
	}
	if l.addEntry(e.Conn, e, l.json) {
		return
	}
	l.m.dropped.Inc()
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

// Close stops the writer once it has written the buffered lines, and
// closes the file. It returns ctx.Err() if ctx ends first (the writer
// then stops after its current write).
// A second Close (or one after the writer stopped on a panic) waits the
// same way, as long as ctx allows.
func (l *Log) Close(ctx context.Context) error {
	if !l.closed.Swap(true) {
		close(l.stop)
	}
	select {
	case <-l.done:
		<-l.clockDone // the clock stops as soon as done is closed
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
		case <-l.wake:
			l.writeBuffered(false)
		case <-t.C:
			l.writeBuffered(true)
		case ack := <-l.reopen:
			l.writeBuffered(true)
			l.doReopen()
			close(ack)
		case <-l.stop:
			l.writeBuffered(true)
			l.closeFile()
			return
		}
	}
}

// writeAlign is the file offset the writer's writes end on when it is
// woken by the lines in the buffers rather than by its tick: the page
// cache stores a file in folios of up to this size when a write covers
// them whole, and a log grows by whole folios at less cost. Appending 64
// KiB at a time to a file on ext4 (Linux 6.18) cost 0.32-0.39 ns a byte
// when each write ended on a multiple of 64 KiB, against 0.62-0.71 when
// every write began 100 bytes past one (BenchmarkFileAppend, four runs).
const writeAlign = 64 << 10

// writeBuffered takes the lines buffered and writes them in order: all
// of them when all is set (the tick, a reopen, the close: no line waits
// more than flushEvery), else up to the last writeAlign boundary they
// reach in the file. The rest waits in the writer's own buffer for the
// next write (outBuf's tail), the chunks they came in go back to the free
// list at once.
func (l *Log) writeBuffered(all bool) {
	if n := l.take(); n > 0 {
		l.merge(n)
	}
	l.recycle()
	buf := l.outBuf
	w := len(buf)
	if !all && l.offset >= 0 {
		w = int(max((l.offset+int64(len(buf)))&^(writeAlign-1)-l.offset, 0))
	}
	if w == 0 {
		return
	}
	lines := bytes.Count(buf[:w], newline) // a line's one newline ends it (format.go escapes the rest)
	if _, err := l.out.Write(buf[:w]); err != nil {
		l.writeFailed(err)
	} else {
		l.m.written.Add(float64(lines))
	}
	if l.offset >= 0 {
		// Where the file ends now, as the next write will find it:
		// another writer, or logrotate's copytruncate, may have moved it.
		if end, err := l.file.Seek(0, io.SeekCurrent); err == nil {
			l.offset = end
		} else {
			l.offset = -1
		}
	}
	l.outBuf = buf[:copy(buf, buf[w:])]
}

var newline = []byte{'\n'}

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

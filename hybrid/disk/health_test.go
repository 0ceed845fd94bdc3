package disk

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/blockdev"
)

// Tests of taking a failing disk out of service and bringing it back.

// logRecorder is a slog.Handler that keeps every message logged.
type logRecorder struct {
	mu    sync.Mutex
	lines []string // "LEVEL message key=value ..."
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

// count returns how many lines contain s.
func (l *logRecorder) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

const (
	logOut  = "disk taken out of service"
	logBack = "disk back in service"
)

// wantOnce checks that going out of service and coming back were logged
// once each.
func wantOnce(t *testing.T, log *logRecorder) {
	t.Helper()
	if log.count(logOut) != 1 || log.count(logBack) != 1 {
		t.Fatalf("out logged %d times, back %d; want 1, 1", log.count(logOut), log.count(logBack))
	}
}

// healthOpts takes the disk out after 5 failures in 10 s and probes
// every 20 ms.
func healthOpts(log *logRecorder) Options {
	o := testOpts()
	o.ErrorLimit, o.ErrorWindow, o.ProbeInterval = 5, 10*time.Second, 20*time.Millisecond
	o.ReadTimeout = 50 * time.Millisecond
	o.Logger = slog.New(log)
	return o
}

// TestOutOfServiceOnReadErrors: ErrorLimit failed reads take the disk
// out of service, logged once with the errors rate-limited; Gets then
// skip the device and Inserts are dropped, counted; the probe brings the
// disk back once reads work, logged once, and everything indexed before
// is served again.
func TestOutOfServiceOnReadErrors(t *testing.T) {
	log := &logRecorder{}
	e, dev, mem, id := faultAfter(t, healthOpts(log), "h", 10, blockdev.Fault{Op: blockdev.OpRead, Action: blockdev.Fail})
	expect(t, e, "h", 10, 0)
	s := e.Stats()
	if s.Online || s.OutOfService != 1 || s.IOErrors != 5 || s.OfflineGets != 5 {
		t.Fatalf("online %v, out %d, io errors %d, offline gets %d; want false, 1, 5, 5", s.Online, s.OutOfService, s.IOErrors, s.OfflineGets)
	}
	reads := mem.Stats().Reads
	if e.Insert([]byte("new"), []byte("v"), time.Time{}) || e.Stats().DropOffline != 1 {
		t.Fatalf("insert while out of service accepted (drops %d)", e.Stats().DropOffline)
	}
	if n := log.count(logOut); n != 1 || log.count("suppressed=4") != 1 {
		t.Fatalf("%d lines say the disk was taken out (want 1), %d of them that 4 errors were not logged",
			n, log.count("suppressed=4"))
	}
	if n := log.count("disk read failed"); n != 1 {
		t.Fatalf("%d read error lines for 5 errors within a second, want 1 (rate-limited)", n)
	}
	dev.Remove(id)
	waitFor(t, "the disk back in service", func() bool { return e.Stats().Online })
	if mem.Stats().Reads == reads {
		t.Fatal("back in service without a probe read")
	}
	expect(t, e, "h", 10, 1)
	insertAll(t, e, "h", 2, 2, 300)
	expect(t, e, "h", 2, 2)
	wantOnce(t, log)
}

// TestOutOfServiceOnHang: a hung device is taken out by read timeouts,
// once it has held a read for stuckAfter (not before: the first
// timeouts are held against nobody); its probe reads hang too, and while
// one hangs no other is started; once the device answers, the disk comes
// back.
func TestOutOfServiceOnHang(t *testing.T) {
	log := &logRecorder{}
	o := healthOpts(log)
	e, dev, _, id := faultAfter(t, o, "g", 5, hangReads)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() { e.Get(keyN("g", i), nil) })
	}
	wg.Wait()
	if s := e.Stats(); !s.Online || s.ReadTimeouts != 5 {
		t.Fatalf("online %v after %d timeouts within ReadTimeout of the hang: want in service", s.Online, s.ReadTimeouts)
	}
	t0 := time.Now()
	for i := 0; e.Stats().Online; i++ {
		if time.Since(t0) > stuckAfter(o.ReadTimeout)+5*time.Second {
			t.Fatalf("a hung device still in service after %d timed-out reads", e.Stats().ReadTimeouts)
		}
		e.Get(keyN("g", i%5), nil)
	}
	if took := time.Since(t0); took < stuckAfter(o.ReadTimeout)-2*o.ReadTimeout {
		t.Fatalf("taken out %v after the hang, before stuckAfter %v", took, stuckAfter(o.ReadTimeout))
	}
	// 4 workers and one probe hang; more probes would add to them.
	waitFor(t, "a probe read", func() bool { return dev.Hanging() == o.ReadWorkers+1 })
	time.Sleep(10 * o.ProbeInterval)
	if n := dev.Hanging(); n != o.ReadWorkers+1 {
		t.Fatalf("%d reads hang, want %d: probes pile up", n, o.ReadWorkers+1)
	}
	dev.Remove(id)
	waitFor(t, "the disk back in service", func() bool { return e.Stats().Online })
	expect(t, e, "g", 5, 1)
	wantOnce(t, log)
}

// TestOutOfServiceOnWriteErrors: failed flush writes count too; entries
// whose writes failed are never indexed, so nothing of them is served
// when the disk is back.
func TestOutOfServiceOnWriteErrors(t *testing.T) {
	log := &logRecorder{}
	e, dev, _, id := faultAfter(t, healthOpts(log), "w", 4, blockdev.Fault{Op: blockdev.OpWrite, Action: blockdev.Fail})
	for i := 0; e.Stats().Online; i++ {
		k := keyN("x", i)
		e.Insert(k, mval(k, 1, 300), time.Time{})
		settle(t, e)
		if i > 100 {
			t.Fatal("still in service after 100 failed writes")
		}
	}
	entries := e.Stats().Entries
	dev.Remove(id)
	waitFor(t, "the disk back in service", func() bool { return e.Stats().Online })
	if s := e.Stats(); s.Entries != entries || entries != 4 {
		t.Fatalf("%d entries indexed (%d when taken out), want the 4 written before", s.Entries, entries)
	}
	expect(t, e, "w", 4, 1)
	expect(t, e, "x", 5, 0)
}

// TestOutOfServiceWindow: failures spread wider than ErrorWindow do not
// take the disk out; ErrorLimit of them within it do. A negative
// ErrorLimit never does.
func TestOutOfServiceWindow(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	for _, tc := range []struct {
		name  string
		limit int
		step  time.Duration // clock advance between failures
		out   bool
	}{
		{"spread", 5, 3 * time.Second, false},
		{"within", 5, 2 * time.Second, true},
		{"never", -1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &logRecorder{}
			dev, _ := newFaulty(t, 16<<20)
			o := healthOpts(log)
			o.ErrorLimit, o.ProbeInterval = tc.limit, time.Hour
			o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
			e := openT(t, dev, o)
			defer closeT(t, e)
			insertAll(t, e, "n", 1, 1, 300)
			dev.Inject(blockdev.Fault{Op: blockdev.OpRead, Action: blockdev.Fail})
			for range 20 {
				e.Get(keyN("n", 0), nil)
				clock.Add(int64(tc.step))
			}
			if s := e.Stats(); s.Online == tc.out || log.count(logOut) != int(s.OutOfService) {
				t.Fatalf("online %v, out %d, logged %d", s.Online, s.OutOfService, log.count(logOut))
			}
		})
	}
}

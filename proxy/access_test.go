package proxy

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/accesslog"
)

type recordedAccess struct {
	status int
	rec    AccessRecord
}

type accessRecorder struct {
	got       []recordedAccess
	unstarted int // records logged without a Start time
}

// LogAccess records r with its Start time cleared (counted if unset), so
// that records compare by value.
func (a *accessRecorder) LogAccess(ctx *fasthttp.RequestCtx, r *AccessRecord) {
	rr := *r
	if rr.Start.IsZero() {
		a.unstarted++
	}
	rr.Start = time.Time{}
	a.got = append(a.got, recordedAccess{ctx.Response.StatusCode(), rr})
}

// TestLoggedHandler: each request reaches the logger once, after the
// handler, with its cache status, the tier of a hit, and the origin's
// status and time for a request that waited for the origin.
func TestLoggedHandler(t *testing.T) {
	var p *pair
	p = newPair(t, func(w http.ResponseWriter, r *http.Request) {
		p.clock.Advance(5 * time.Millisecond) // the origin's time
		switch r.URL.Path {
		case "/private":
			w.Header().Set("Cache-Control", "private")
			w.WriteHeader(203)
		case "/gone":
			w.Header().Set("Cache-Control", "max-age=60")
			w.WriteHeader(404)
		default:
			w.Header().Set("Cache-Control", "max-age=60")
		}
		w.Write([]byte("body"))
	}, nil)
	rec := &accessRecorder{}
	h := p.srv.LoggedHandler(p.srv.handler, rec)
	for _, tc := range []struct {
		method, path string
		want         recordedAccess
	}{
		{"GET", "/a", recordedAccess{200, AccessRecord{"miss", "fwd=uri-miss; stored", "none", 200, 5 * time.Millisecond, time.Time{}}}},
		{"GET", "/a", recordedAccess{200, AccessRecord{"hit", "hit; detail=memory", "memory", 0, 0, time.Time{}}}},
		{"HEAD", "/a", recordedAccess{200, AccessRecord{"hit", "hit; detail=memory", "memory", 0, 0, time.Time{}}}},
		{"POST", "/a", recordedAccess{200, AccessRecord{"bypass", "fwd=bypass", "none", 200, 5 * time.Millisecond, time.Time{}}}},
		{"GET", "/private", recordedAccess{203, AccessRecord{"miss", "fwd=uri-miss", "none", 203, 5 * time.Millisecond, time.Time{}}}},
		{"GET", "/gone", recordedAccess{404, AccessRecord{"miss", "fwd=uri-miss; stored", "none", 404, 5 * time.Millisecond, time.Time{}}}},
	} {
		var req fasthttp.Request
		req.Header.SetMethod(tc.method)
		req.SetRequestURI("http://example.com" + tc.path)
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1234}, nil)
		n := len(rec.got)
		h(&ctx)
		if len(rec.got) != n+1 {
			t.Fatalf("%s %s: logged %d times", tc.method, tc.path, len(rec.got)-n)
		}
		if got := rec.got[n]; got != tc.want {
			t.Errorf("%s %s: logged %+v, want %+v", tc.method, tc.path, got, tc.want)
		}
		if rec.unstarted != 0 {
			t.Errorf("%s %s: logged without a start time", tc.method, tc.path)
		}
		if ctx.UserValue(accessKey{}) != nil {
			t.Errorf("%s %s: the record stays on the request", tc.method, tc.path)
		}
		if s := ctx.Response.BodyStream(); s != nil {
			if c, ok := s.(interface{ Close() error }); ok {
				c.Close()
			}
		}
	}
}

// TestNoteWithoutLogger: the unlogged path neither reads the clock for
// the origin's part nor records anything.
func TestNoteWithoutLogger(t *testing.T) {
	p := newPair(t, cacheable("x"), nil)
	var ctx fasthttp.RequestCtx
	if !p.srv.originClock().IsZero() {
		t.Error("originClock read the clock for an unlogged request")
	}
	p.srv.noteOrigin(&ctx, time.Now(), 200) // must not panic or record
	if accessRecord(&ctx) != nil {
		t.Error("an unlogged request got a record")
	}
}

type nopAccessLogger struct{ n int }

func (l *nopAccessLogger) LogAccess(*fasthttp.RequestCtx, *AccessRecord) { l.n++ }

// TestLoggedHitAllocs: the logging wrapper adds no allocation to a
// memory hit. Skipped under -race.
func TestLoggedHitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under -race")
	}
	p := newPair(t, cacheable("small body"), nil)
	p.get("/alloc")
	l := &nopAccessLogger{}
	h := p.srv.LoggedHandler(p.srv.handler, l)
	var ctx fasthttp.RequestCtx
	serve := getOn(&ctx, h, "/alloc")
	serve()
	if n := testing.AllocsPerRun(200, serve); n != 0 {
		t.Fatalf("a logged hit allocates %.1f times", n)
	}
	if l.n != 202 {
		t.Errorf("logged %d requests, want 202", l.n)
	}
}

// untimedLogger's Second tells the seconds since the Unix epoch by the
// number of its calls, not by a clock.
type untimedLogger struct {
	starts  []time.Time
	seconds int64
}

func (l *untimedLogger) Timed() bool { return false }
func (l *untimedLogger) Second() time.Time {
	l.seconds++
	return time.Unix(l.seconds, 0)
}
func (l *untimedLogger) LogAccess(_ *fasthttp.RequestCtx, r *AccessRecord) {
	l.starts = append(l.starts, r.Start)
}

// TestUntimedLogger: a logger that needs no time gets records whose Start
// is its Second read as the request arrived (the wrapper read no clock),
// not the second the handler returned: a combined line's time is the
// request's arrival, as Apache's %t.
func TestUntimedLogger(t *testing.T) {
	p := newPair(t, cacheable("x"), nil)
	l := &untimedLogger{}
	h := p.srv.LoggedHandler(func(ctx *fasthttp.RequestCtx) {
		l.Second() // a second passes while the handler runs
		p.srv.handler(ctx)
	}, l)
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetHost("example.com")
	ctx.Request.Header.SetRequestURI("/u")
	h(&ctx)
	if len(l.starts) != 1 || !l.starts[0].Equal(time.Unix(1, 0)) {
		t.Errorf("untimed logger got starts %v, want one, its first second", l.starts)
	}
}

// TestLoggedFileHitAllocs: a memory hit logged to a file through the
// accesslog adapter, in either format, allocates nothing once the
// log's buffers are warm. Skipped under -race.
func TestLoggedFileHitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under -race")
	}
	p := newPair(t, cacheable(strings.Repeat("x", 1024)), nil)
	p.get("/alloc")
	for _, format := range []string{accesslog.FormatCombined, accesslog.FormatJSON} {
		t.Run(format, func(t *testing.T) {
			l, err := accesslog.Open(accesslog.Options{Path: filepath.Join(t.TempDir(), "access.log"), Format: format, BufferLines: 1 << 16})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(context.Background())
			h := p.srv.LoggedHandler(p.srv.handler, fileAccessLogger{l})
			var ctx fasthttp.RequestCtx
			ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
			serve := getOn(&ctx, h, "/alloc")
			for range 3000 { // the log's spare buffers fill
				serve()
			}
			// A new second's stamp is one allocation, a new batch buffer
			// another: a few in a thousand requests at most.
			if n := testing.AllocsPerRun(1000, serve); n > 0.01 {
				t.Fatalf("a logged hit allocates %.3f times", n)
			}
		})
	}
}

// getOn returns a func that serves GET uri on ctx (reset each time) with h.
func getOn(ctx *fasthttp.RequestCtx, h fasthttp.RequestHandler, uri string) func() {
	return func() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetHost("example.com")
		ctx.Request.Header.SetRequestURI(uri)
		h(ctx)
	}
}

// TestStartClock: a request's start time is the time now, by the wall
// clock and the monotonic one, and within a second of the clock's base it
// is told from that base (one clock read) rather than from time.Now.
func TestStartClock(t *testing.T) {
	var c startClock
	for i := range 100 {
		before := time.Now()
		got := c.now()
		after := time.Now()
		if got.Before(before) || got.After(after) {
			t.Fatalf("now() = %v, not within [%v, %v] by the monotonic clock", got, before, after)
		}
		if w := got.UnixNano(); w < before.UnixNano()-int64(time.Millisecond) || w > after.UnixNano()+int64(time.Millisecond) {
			t.Fatalf("now() wall %d, not within a millisecond of [%d, %d]", w, before.UnixNano(), after.UnixNano())
		}
		if i == 0 {
			continue
		}
		if b := c.base.Load(); b == nil || b.Equal(got) && time.Since(*b) < startRebase/2 {
			t.Fatalf("call %d read time.Now anew (base %v) within a second of the base", i, b)
		}
	}
	old := time.Now().Add(-2 * startRebase)
	c.base.Store(&old)
	if got := c.now(); got.Sub(old) < startRebase {
		t.Errorf("a base %v old was kept: now() = %v", 2*startRebase, got)
	}
	if b := c.base.Load(); b == &old || time.Since(*b) > startRebase {
		t.Errorf("the base was not renewed: %v", b)
	}
}

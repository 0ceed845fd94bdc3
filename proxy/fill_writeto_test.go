package proxy

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stallConn is a connection carrying one GET whose response writes are
// recorded; once stallAt bytes have been written, a Write waits for gate
// before it takes any of its bytes, as a socket whose client stopped
// reading holds a write's bytes in the writer's buffer.
type stallConn struct {
	replayConn
	stallAt  int
	gate     *gate
	stalled  chan struct{}
	out      []byte
	maxWrite int
}

func newStallConn(path string, stallAt int) *stallConn {
	return &stallConn{
		replayConn: replayConn{req: "GET " + path + " HTTP/1.1\r\nHost: example.com\r\n\r\n", n: 1},
		stallAt:    stallAt, gate: newGate(), stalled: make(chan struct{}),
	}
}

func (c *stallConn) Write(b []byte) (int, error) {
	if len(c.out)+len(b) > c.stallAt {
		select {
		case <-c.stalled:
		default:
			close(c.stalled)
		}
		c.gate.wait()
	}
	c.out = append(c.out, b...)
	c.maxWrite = max(c.maxWrite, len(b))
	return len(b), nil
}

// body returns the body of the response written to c.
func (c *stallConn) body() []byte {
	_, b, _ := bytes.Cut(c.out, []byte("\r\n\r\n"))
	return b
}

// serveStall serves c on p's server and returns a channel closed when done.
func (p *pair) serveStall(c *stallConn) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.http.ServeConn(c); err != nil {
			p.t.Error(err)
		}
	}()
	return done
}

func sizedOrigin(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// TestFillBodyLent: a fill's body goes to the connection from the fill's
// window, a slice's bytes in one write, not copied through fasthttp's
// 4 KiB write buffer.
func TestFillBodyLent(t *testing.T) {
	body := bigBody(8 * (64 << 10))
	p := newPair(t, sizedOrigin(body), func(o *Options) { o.FillWindow = 2 })
	c := newStallConn("/lent", 1<<30)
	<-p.serveStall(c)
	if !bytes.Equal(c.body(), body) {
		t.Fatalf("body: %d of %d bytes", len(c.body()), len(body))
	}
	if c.maxWrite < 32<<10 {
		t.Fatalf("largest write %d bytes: the body was copied through a buffer", c.maxWrite)
	}
}

// TestDetachedWriterKeepsItsBytes: a reader stalls in a write of bytes
// lent from the fill's window and is detached (FillLagWait); the fill
// reuses the slot for a later slice, but the stalled write's bytes must
// stay those of its own slice.
func TestDetachedWriterKeepsItsBytes(t *testing.T) {
	const slice = 64 << 10
	body := bigBody(12 * slice)
	p := newPair(t, sizedOrigin(body), func(o *Options) {
		o.FillWindow, o.SliceSize, o.FillLagWait = 2, slice, 20*time.Millisecond
	})
	c := newStallConn("/stall", 2*slice+slice/2) // within slice 2, in slot 0 again
	done := p.serveStall(c)
	<-c.stalled
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 }) // slot 0 held slice 4, 6, …
	c.gate.open()
	<-done
	if got := c.body(); !bytes.Equal(got, body) {
		i := 0
		for i < min(len(got), len(body)) && got[i] == body[i] {
			i++
		}
		t.Fatalf("body: %d of %d bytes, first difference at %d", len(got), len(body), i)
	}
}

// partsStore is a mapStore that also takes values in parts
// (partsInserter), recording the calls.
type partsStore struct {
	*mapStore
	calls [][3][]byte // the parts as given, borrowed: only compared by address
}

func (s *partsStore) InsertParts(key, head, body, tail []byte, expiry time.Time) {
	s.calls = append(s.calls, [3][]byte{head, body, tail})
	s.Insert(key, append(append(append([]byte(nil), head...), body...), tail...), expiry)
}

// TestRecordBodyInsertedInParts: a fill's record goes to a store that
// takes parts with its inline body given straight from the fill's
// buffer, not copied into the encoded record first, and it reads back
// whole.
func TestRecordBodyInsertedInParts(t *testing.T) {
	body := bigBody(100 << 10)
	origin := httptest.NewServer(sizedOrigin(body))
	defer origin.Close()
	store := &partsStore{mapStore: newMapStore()}
	srv, err := New(store, Options{
		Origins:    []OriginOptions{{URL: origin.URL, ResponseTimeout: 5 * time.Second}},
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	c := newStallConn("/parts", 1<<30)
	if err := srv.HTTPServer().ServeConn(c); err != nil || !bytes.Equal(c.body(), body) {
		t.Fatalf("%v, %d bytes", err, len(c.body()))
	}
	if len(store.calls) != 1 || !bytes.Equal(store.calls[0][1], body) || len(store.calls[0][2]) != 4 {
		t.Fatalf("InsertParts calls: %d", len(store.calls))
	}
	records := 0
	for k, rec := range store.m {
		var o object
		if k[0] != metaKeyPrefix {
			continue
		}
		records++
		if decodeObject(&o, rec) != nil || !bytes.Equal(o.Body, body) {
			t.Fatalf("record %q does not decode to the body", k)
		}
	}
	if records != 1 {
		t.Fatalf("%d records stored", records)
	}
}

// TestDetachedWritersShareLentBytes: two readers stall in writes of bytes
// lent from the same window buffer and are both detached; the fill gives
// the slot a fresh buffer. The first to finish its write must not return
// the shared buffer to the pool while the other still writes from it.
func TestDetachedWritersShareLentBytes(t *testing.T) {
	const slice = 64 << 10
	body := bigBody(12 * slice)
	p := newPair(t, sizedOrigin(body), func(o *Options) {
		o.FillWindow, o.SliceSize, o.FillLagWait = 2, slice, 300*time.Millisecond
	})
	a := newStallConn("/shared", 2*slice+slice/2) // within slice 2, in slot 0
	doneA := p.serveStall(a)
	<-a.stalled
	b := newStallConn("/shared", 2*slice+slice/2) // joins the fill, stalls in the same bytes
	doneB := p.serveStall(b)
	<-b.stalled
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 }) // both detached, slot 0 reused
	a.gate.open()
	<-doneA
	// Whatever a gave back to the pool is taken and written over.
	var taken [][]byte
	for range 64 {
		s := getSlab(sliceHeaderLen + slice)
		s = s[:cap(s)]
		for i := range s {
			s[i] = 0xEE
		}
		taken = append(taken, s)
	}
	b.gate.open()
	<-doneB
	for _, s := range taken {
		putSlab(s)
	}
	for name, c := range map[string]*stallConn{"first": a, "second": b} {
		if got := c.body(); !bytes.Equal(got, body) {
			i := 0
			for i < min(len(got), len(body)) && got[i] == body[i] {
				i++
			}
			t.Fatalf("%s reader: %d of %d bytes, first difference at %d", name, len(got), len(body), i)
		}
	}
}

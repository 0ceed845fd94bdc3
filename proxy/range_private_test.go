package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// noValidatorOrigin serves body without ETag or Last-Modified: ranges at
// once, the whole body (a fill) its headers and first bytes at once, the
// rest after gate opens. With hold set, every answer waits for it.
type noValidatorOrigin struct {
	body []byte
	gate *gate
	hold *gate
	mu   sync.Mutex
	seen []string // the Range of each request, "" for none
}

func (no *noValidatorOrigin) handler(w http.ResponseWriter, r *http.Request) {
	no.mu.Lock()
	no.seen = append(no.seen, r.Header.Get("Range"))
	no.mu.Unlock()
	if no.hold != nil {
		no.hold.wait()
	}
	w.Header().Set("Cache-Control", "max-age=60")
	if r.Header.Get("Range") != "" {
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(no.body))
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(no.body)))
	_, _ = w.Write(no.body[:10])
	w.(http.Flusher).Flush()
	no.gate.wait()
	_, _ = w.Write(no.body[10:])
}

func (no *noValidatorOrigin) ranges() []string {
	no.mu.Lock()
	defer no.mu.Unlock()
	return append([]string(nil), no.seen...)
}

// TestPrivateRangeServedFromProbe: a cold range of an object without a
// validator is answered from the origin's answer to the slice probe
// itself, while the whole-object fill it starts is held back: the client
// does not wait for the fill, and gets the bytes of that one answer.
// Ranges the probe does not cover (two ranges far apart) take the fill's
// way; once the fill is let go the object is stored and ranges are hits.
func TestPrivateRangeServedFromProbe(t *testing.T) {
	no := &noValidatorOrigin{body: bigBody(1 << 20), gate: newGate()}
	p := newPair(t, no.handler, func(o *Options) { o.SliceSize = testSlice; o.FillWindow = 2 })
	p.srv.joinAhead = 128 << 10
	defer no.gate.open()
	for _, tc := range []struct{ spec, status string }{
		{"700000-700099", "strata; fwd=uri-miss"},
		{"700000-700099", "strata; fwd=uri-miss"}, // the fill runs (held): far ahead of it, passed
		{"900000-900000", "strata; fwd=uri-miss"},
	} {
		if cs := getRange(t, p, tc.spec, no.body); cs != tc.status {
			t.Errorf("%s: Cache-Status %q, want %q", tc.spec, cs, tc.status)
		}
	}
	probe := fmt.Sprintf("bytes=%d-%d", 700000/testSlice*testSlice, (700000/testSlice+1)*testSlice-1)
	if got := no.ranges(); len(got) != 4 || got[0] != probe || got[1] != "" {
		t.Fatalf("origin saw %q, want the probe %q, one whole GET, and two ranges passed on", got, probe)
	}
	// Two ranges in slices far apart: not the probe's run; they are read
	// from the fill, so they wait for it.
	two := make(chan error)
	go func() {
		resp := p.get("/obj", "Range", "bytes=0-9,800000-800009")
		defer releaseResp(resp)
		if resp.StatusCode() != 206 || !bytes.Contains(resp.Body(), no.body[800000:800010]) {
			two <- fmt.Errorf("two ranges: status %d", resp.StatusCode())
			return
		}
		two <- nil
	}()
	waitFor(t, func() bool { return p.waiters("/obj") >= 1 })
	no.gate.open()
	if err := <-two; err != nil {
		t.Error(err)
	}
	waitFor(t, func() bool {
		if f := p.srv.fills.joinExisting(keyOf(p, "/obj")); f != nil {
			f.release()
			return false
		}
		return p.srv.fetches.idle()
	})
	if cs := getRange(t, p, "300000-300099", no.body); cs != "strata; hit; detail=memory" {
		t.Errorf("after the fill: Cache-Status %q", cs)
	}
}

// TestPrivateFetchSharedByWaiters: requests that joined one probe are all
// answered from its bytes (one origin Range request for all of them), and
// a request arriving after it went private does not join it.
func TestPrivateFetchSharedByWaiters(t *testing.T) {
	probe := newGate()
	no := &noValidatorOrigin{body: bigBody(1 << 20), gate: newGate(), hold: probe}
	no.gate.open()
	p := newPair(t, no.handler, func(o *Options) { o.SliceSize = testSlice; o.FillWindow = 2 })
	body := no.body
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := 600000 + i*100
			getRange(t, p, strconv.Itoa(off)+"-"+strconv.Itoa(off+99), body)
		}()
	}
	waitFor(t, func() bool { return p.fetchRefs("/obj", 600000/testSlice) >= n })
	probe.open()
	wg.Wait()
	seen := no.ranges()
	if len(seen) == 0 || seen[0] == "" {
		t.Fatalf("origin saw %q", seen)
	}
	ranged := 0
	for _, r := range seen {
		if r != "" {
			ranged++
		}
	}
	if ranged != 1 {
		t.Errorf("origin saw %q: %d Range requests for %d waiters of one probe, want 1", seen, ranged, n)
	}
}

// TestFillWakesForReaderAhead: a handler that joined the fill behind a
// cold range counts as a reader at 0 until it registers; when it then
// registers ahead of the window, the fill waiting for that window must go
// on at once, not after FillLagWait.
func TestFillWakesForReaderAhead(t *testing.T) {
	no := &noValidatorOrigin{body: bigBody(1 << 20), gate: newGate()}
	p := newPair(t, no.handler, func(o *Options) {
		o.SliceSize, o.FillWindow, o.FillLagWait = testSlice, 2, time.Minute
	})
	defer no.gate.open()
	getRange(t, p, "900000-900099", no.body) // the probe answers; the fill starts behind it
	var f *fill
	waitFor(t, func() bool { f = p.srv.fills.joinExisting(keyOf(p, "/obj")); return f != nil })
	no.gate.open() // the fill fills its window, then waits for the joined handler
	waitFor(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.waiting && f.received >= 2*testSlice
	})
	r := f.newReaderAt(900000)
	defer r.Close()
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 100)
		_, err := (&fillSource{r: r}).readAt(buf, 900000, 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the fill did not go on once its last handler registered ahead of the window")
	}
}

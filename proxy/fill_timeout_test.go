package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// slowOrigin answers a cacheable 1000-byte body: its headers and 10 bytes
// at once, then 10 bytes every step (never, for step 0) until the body is
// sent or stop opens.
func slowOrigin(step time.Duration, stop *gate) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", "1000")
		for range 100 {
			_, _ = w.Write([]byte(strings.Repeat("x", 10)))
			w.(http.Flusher).Flush()
			var tick <-chan time.Time
			if step > 0 {
				tick = time.After(step)
			}
			select {
			case <-tick:
			case <-stop.ch:
				return
			}
		}
	}
}

// TestSlowOrigin: an origin that stalls mid-body longer than
// ResponseTimeout (timeouts.read), or keeps sending, slowly, past
// FillTimeout (limits.fill_timeout), has its response cut there: nothing
// is stored, and it counts as a timeout (not as truncated). A pass has
// sent its status line: the client's connection closes short of the body.
// A fill's leader reads a small declared body before its status line
// (leadFill), so its client gets a clean 504 instead.
func TestSlowOrigin(t *testing.T) {
	const fill = "GET /s HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"
	const pass = "GET /s HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n"
	for _, tc := range []struct {
		name      string
		req       string
		step      time.Duration // between 10-byte writes; 0: stall after the first
		read      time.Duration // ResponseTimeout
		fillLimit time.Duration // FillTimeout
		status    string        // 200: cut short
	}{
		{"stall, fill", fill, 0, 200 * time.Millisecond, 10 * time.Minute, "504"},
		{"stall, pass", pass, 0, 200 * time.Millisecond, 10 * time.Minute, "200"},
		{"drip past fill timeout", fill, 20 * time.Millisecond, 5 * time.Second, 300 * time.Millisecond, "504"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := newGate()
			p := newPair(t, slowOrigin(tc.step, stop), func(o *Options) {
				o.Origins[0].ResponseTimeout, o.FillTimeout = tc.read, tc.fillLimit
			})
			t.Cleanup(stop.open) // before the pair closes: the origin handler returns
			start := time.Now()
			out, _ := p.raw(tc.req)
			took := time.Since(start)
			head, body, _ := strings.Cut(out, "\r\n\r\n")
			switch {
			case tc.status == "200" && (!strings.HasPrefix(head, "HTTP/1.1 200") || len(body) >= 1000):
				t.Fatalf("got %q and %d body bytes, want a 200 cut short", head, len(body))
			case tc.status == "504" && !strings.HasPrefix(head, "HTTP/1.1 504"):
				t.Fatalf("got %q, want a 504", head)
			}
			if took > 1500*time.Millisecond { // the whole drip takes 2s; a stall never ends
				t.Errorf("cut after %v, want about %v", took, min(tc.read, tc.fillLimit))
			}
			p.settle()
			if n := p.store.Len(); n != 0 {
				t.Errorf("stored %d entries", n)
			}
			for _, f := range []error{ErrOriginTimeout, ErrTruncated} {
				want := 0.0
				if f == ErrOriginTimeout {
					want = 1
				}
				if got := testutil.ToFloat64(p.srv.m.originErrors[faultOf(f)]); got != want {
					t.Errorf("%s counted %v times, want %v", originFaults[faultOf(f)].kind, got, want)
				}
			}
		})
	}
}

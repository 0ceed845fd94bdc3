package proxy

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
)

// wantDateHeader is the header installDate and addStoredFields give a
// response of status with the stored fields kvs: what dateHeaders must
// give too.
func wantDateHeader(status int, kvs []headerKV) string {
	var h fasthttp.ResponseHeader
	h.SetStatusCode(status)
	writeHeaders(&h, kvs)
	return headerState(&h)
}

// headerState is h as written and its fields as listed: a header without
// NoDefaultDate (as here, outside a fasthttp.Server) is written with the
// time of sending, not the Date field it holds.
func headerState(h *fasthttp.ResponseHeader) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s|", h.StatusCode(), h.Header())
	for k, v := range h.All() {
		fmt.Fprintf(&b, "%s: %s|", k, v)
	}
	return b.String()
}

func datedFields(date string) []headerKV {
	kvs := append([]headerKV(nil), typicalHeaders...)
	for i, kv := range kvs {
		if string(kv.Key) == "Date" {
			kvs[i].Value = []byte(date)
		}
	}
	return kvs
}

// TestDateHeaders: a miss's client header is the same whether its Date
// is parsed (installDate) or copied from the one kept for it, whatever
// came before: the same Date again (kept on its second miss with no
// other Date missing between),
// another Date, another status, a Date installDate cannot send.
func TestDateHeaders(t *testing.T) {
	s := benchServer(t, newMapStore())
	d1, d2 := "Wed, 02 Dec 2026 06:48:42 GMT", "Wed, 02 Dec 2026 06:48:43 GMT"
	steps := []struct {
		status int
		date   string
		kept   bool // a header for date is kept after the step
	}{
		{200, d1, false}, {200, d1, true}, {200, d1, true}, {404, d1, true},
		{200, d2, false}, {200, d1, true}, {200, d2, true}, {200, d2, true},
		{304, d2, true}, {200, "bad\r\nX-Injected: 1", true}, {200, d2, true}, {203, d2, true},
	}
	for i, st := range steps {
		kvs := datedFields(st.date)
		var h fasthttp.ResponseHeader
		h.SetStatusCode(st.status)
		s.writeFillHeaders(&h, kvs)
		if got, want := headerState(&h), wantDateHeader(st.status, kvs); got != want {
			t.Fatalf("step %d (%d, %q):\n%s\nwant\n%s", i, st.status, st.date, got, want)
		}
		last := s.dates.last.Load()
		if kept := last != nil && usableDate([]byte(st.date)) && string(last.date) == st.date; kept != st.kept && usableDate([]byte(st.date)) {
			t.Errorf("step %d: kept %v, want %v", i, kept, st.kept)
		}
	}
}

// TestDateHeadersEmpty: a response without a stored Date gets the time
// of sending, never a kept header's Date.
func TestDateHeadersEmpty(t *testing.T) {
	s := benchServer(t, newMapStore())
	kvs := datedFields("Wed, 02 Dec 2026 06:48:42 GMT")
	for range 2 {
		var h fasthttp.ResponseHeader
		h.SetStatusCode(200)
		s.writeFillHeaders(&h, kvs)
	}
	if s.dates.last.Load() == nil {
		t.Fatal("no header kept")
	}
	var h fasthttp.ResponseHeader
	h.SetStatusCode(200)
	s.writeFillHeaders(&h, typicalHeaders[3:]) // no Date
	if d := h.Peek("Date"); len(d) == 0 || string(d) == "Wed, 02 Dec 2026 06:48:42 GMT" {
		t.Fatalf("Date %q, want the time of sending", d)
	}
}

// TestDateHeadersConcurrent: responses written at once with Dates that
// alternate get their own (run it with -race).
func TestDateHeadersConcurrent(t *testing.T) {
	s := benchServer(t, newMapStore())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				date := fmt.Sprintf("Wed, 02 Dec 2026 06:48:%02d GMT", (i/3+g)%4)
				kvs := datedFields(date)
				var h fasthttp.ResponseHeader
				h.SetStatusCode(200)
				s.writeFillHeaders(&h, kvs)
				if got := string(h.Peek("Date")); got != date {
					t.Errorf("Date %q, want %q", got, date)
					return
				}
			}
		})
	}
	wg.Wait()
}

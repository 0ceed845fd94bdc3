package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadAhead: a client reading a cold object slice by slice finds
// the slices ahead of it fetched already, and the origin sends at most
// ReadAhead slices more than the client read; without read-ahead every
// request waits for the origin.
func TestReadAhead(t *testing.T) {
	const slices = 24
	const sz = 64 << 10
	body := bigBody(slices * sz)
	for _, tc := range []struct {
		name      string
		readAhead int
	}{{"on", 4}, {"off", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			var sent atomic.Int64
			var mu sync.Mutex
			asked := map[int]bool{} // slices the origin was asked for
			p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
				var a, b int
				if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &a, &b); err == nil {
					mu.Lock()
					for k := a / sz; k <= b/sz; k++ {
						asked[k] = true
					}
					mu.Unlock()
				}
				w.Header().Set("Cache-Control", "max-age=600")
				w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef-2"`) // an S3 multipart ETag
				cw := &countingWriter{ResponseWriter: w, n: &sent}
				http.ServeContent(cw, r, "", time.Time{}, bytes.NewReader(body))
			}, func(o *Options) { o.ReadAhead = tc.readAhead })
			waited := 0
			for i := range slices {
				mu.Lock()
				ahead := asked[i]
				mu.Unlock()
				resp := p.get("/big", "Range", fmt.Sprintf("bytes=%d-%d", i*sz, (i+1)*sz-1))
				if resp.StatusCode() != 206 || !bytes.Equal(resp.Body(), body[i*sz:(i+1)*sz]) {
					t.Fatalf("slice %d: %d, %d bytes", i, resp.StatusCode(), len(resp.Body()))
				}
				if !ahead {
					waited++
				}
				// Let the read-ahead land, as a client's think time would.
				for range 200 {
					if p.srv.nfills.Load() == 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
			// The origin's last Write may return after the client has
			// its bytes.
			waitFor(t, func() bool { return sent.Load() >= int64(len(body)) })
			got := sent.Load()
			t.Logf("read-ahead %d: %d of %d requests waited for the origin; origin sent %d bytes for %d read (%.3fx); read ahead %d slices",
				tc.readAhead, waited, slices, got, len(body), float64(got)/float64(len(body)), p.srv.readAheads.Load())
			if got < int64(len(body)) || got > int64(len(body))+int64(max(tc.readAhead, 0))*sz {
				t.Errorf("origin sent %d bytes for %d", got, len(body))
			}
			switch {
			case tc.readAhead > 0 && waited > 2: // the first two: no order seen yet
				t.Errorf("%d requests waited for the origin despite read-ahead", waited)
			case tc.readAhead < 0 && waited != slices:
				t.Errorf("%d of %d requests waited without read-ahead", waited, slices)
			}
		})
	}
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

package proxy

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// closeRecorder is a watched body: it records the close's cause.
type closeRecorder struct {
	mu    sync.Mutex
	cause error
	n     int
}

func (c *closeRecorder) Read([]byte) (int, error) { return 0, nil }
func (c *closeRecorder) CloseWithError(err error) error {
	c.mu.Lock()
	c.cause, c.n = err, c.n+1
	c.mu.Unlock()
	return nil
}

func (c *closeRecorder) closed() (error, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause, c.n
}

var _ fasthttp.ReadCloserWithError = (*closeRecorder)(nil)

// TestOpLife: a life ends at its deadline, at cancelAll, or at once when
// its parent had ended; the end closes the watched body once, wakes the
// cond's waiters and closes Done; after unwatch, nothing is closed.
func TestOpLife(t *testing.T) {
	bg := context.Background()
	ended, cancel := context.WithCancel(bg)
	cancel()
	for _, tc := range []struct {
		name    string
		parent  context.Context
		d       time.Duration
		all     bool // cancelAll ends it
		unwatch bool
		want    error
	}{
		{"deadline", bg, 20 * time.Millisecond, false, false, context.DeadlineExceeded},
		{"cancelAll", bg, time.Hour, true, false, context.Canceled},
		{"parent ended", ended, time.Hour, false, false, context.Canceled},
		{"unwatched", bg, 20 * time.Millisecond, false, true, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set lifeSet
			var l opLife
			var mu sync.Mutex
			cond := sync.Cond{L: &mu}
			body := &closeRecorder{}
			l.start(&set, tc.parent, tc.d)
			if d, ok := l.Deadline(); !ok || time.Until(d) > tc.d {
				t.Errorf("deadline %v, %v", d, ok)
			}
			l.watch(body, &cond)
			if tc.unwatch {
				l.unwatch()
			}
			if tc.all {
				set.cancelAll()
			}
			select {
			case <-l.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("never ended")
			}
			if !errors.Is(l.Err(), tc.want) {
				t.Errorf("Err %v, want %v", l.Err(), tc.want)
			}
			cause, n := body.closed()
			// The body is closed just after Done (as a context's AfterFunc runs).
			for deadline := time.Now().Add(5 * time.Second); !tc.unwatch && n == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
				cause, n = body.closed()
			}
			switch {
			case tc.unwatch && n != 0:
				t.Errorf("unwatched body closed %d times", n)
			case !tc.unwatch && (n != 1 || !errors.Is(cause, tc.want)):
				t.Errorf("body closed %d times with %v, want once with %v", n, cause, tc.want)
			}
			l.finish()
			if !errors.Is(l.Err(), tc.want) {
				t.Errorf("finish changed Err to %v", l.Err())
			}
			for i := range set.shards {
				if set.shards[i].head != nil {
					t.Fatal("finish left the life in its set")
				}
			}
		})
	}
}

// TestLifeSetRemove: lives leave their shard's list from any position.
func TestLifeSetRemove(t *testing.T) {
	var set lifeSet
	ls := make([]opLife, 64)
	for i := range ls {
		ls[i].set = &set
		set.add(&ls[i])
	}
	for _, i := range []int{0, 63, 31, 1, 62} {
		set.remove(&ls[i])
	}
	n := 0
	for i := range set.shards {
		for l := set.shards[i].head; l != nil; l = l.next {
			n++
		}
	}
	if n != 59 {
		t.Errorf("%d lives listed, want 59", n)
	}
}

// TestCloseAbortsDrippingFill: a fill whose origin drips a large body
// with FillTimeout far away ends when Close's context runs out: Close
// returns, its client's response is cut, nothing is stored.
func TestCloseAbortsDrippingFill(t *testing.T) {
	stop := newGate()
	sent := make(chan struct{}, 1)
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", "1000000") // a goroutine pumps it
		for {
			_, _ = w.Write([]byte(strings.Repeat("x", 10)))
			w.(http.Flusher).Flush()
			select {
			case sent <- struct{}{}:
			default:
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-stop.ch:
				return
			}
		}
	}, func(o *Options) { o.FillTimeout = time.Hour })
	t.Cleanup(stop.open)
	got := make(chan string, 1)
	go func() {
		out, _ := p.raw("GET /drip HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
		got <- out
	}()
	<-sent
	time.Sleep(50 * time.Millisecond) // the fill pumps
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- p.srv.Close(ctx) }()
	select {
	case err := <-closed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close: %v, want its context's deadline", err)
		}
	case <-time.After(3 * time.Second):
		t.Error("Close did not end the fill")
		stop.open() // the origin ends its body: the fill, then Close, return
		<-closed
	}
	select {
	case out := <-got:
		if len(out) >= 1000000 {
			t.Errorf("the client got the whole body")
		}
	case <-time.After(5 * time.Second):
		t.Error("the client's response never ended")
	}
	if n := p.store.Len(); n != 0 {
		t.Errorf("stored %d entries", n)
	}
}

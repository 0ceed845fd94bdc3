package hybrid

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Close stops accepting operations, writes everything queued, waits for
// the writes, stops every goroutine it started and syncs the device. If
// ctx ends first, queued entries not yet in a buffer are dropped (counted)
// and Close returns ctx's error once the goroutines have stopped. The
// device stays open.
//
// A device that does not answer holds Close at most engCloseGrace (1s)
// and a few engCloseStep past ctx: each step (in-flight operations,
// flushers, reclaimers and prober, I/O workers, the final sync) runs on a goroutine
// of its own, and a step still running then is left behind. Close then
// logs what may be lost (entries queued or in flight, writes not synced:
// the next open recovers the device as after a crash) and returns an
// error wrapping ErrDeviceTimeout. The goroutines left behind end when the
// device returns, if it ever does; nothing they touch is freed.
func (e *Engine) Close(ctx context.Context) error {
	e.closeOnce.Do(func() { e.closeErr = e.close(ctx) })
	return e.closeErr
}

// engCloseGrace is how long Close still waits for its goroutines to stop
// once its ctx has ended (they were told to abort, which takes a moment
// unless the device hangs).
const engCloseGrace = time.Second

func (e *Engine) close(ctx context.Context) error {
	c := engCloser{ctx: ctx, abort: func() { close(e.abort) }}
	c.wait("in-flight operations", e.gate.shut)
	for _, f := range e.flush {
		close(f.stop)
	}
	c.wait("flushers", e.flushWG.Wait)
	close(e.stopReclaim)
	c.wait("reclaimers and prober", e.wg.Wait)
	c.wait("I/O workers", e.rt.stop)
	var serr error
	synced := c.wait("sync", func() { serr = e.dev.Sync() })
	switch {
	case len(c.stuck) > 0:
		e.opts.Logger.Error("hybrid: close: the device did not answer; giving up on it: entries queued or in flight are lost, and unsynced writes may be; the next start recovers as after a crash",
			"waiting_for", strings.Join(c.stuck, ", "), "queued_bytes", e.queued.Load(), "pending_keys", e.pending.len())
		return fmt.Errorf("hybrid: close: %w (%s): %w", ErrDeviceTimeout, strings.Join(c.stuck, ", "), ctx.Err())
	case c.expired != nil:
		return fmt.Errorf("hybrid: close: %w", ctx.Err())
	case synced && serr != nil:
		return fmt.Errorf("hybrid: close: sync: %w", serr)
	}
	return nil
}

// engCloser runs Close's steps, each on a goroutine of its own, and waits
// for each until ctx ends; then it aborts (once) and waits engCloseGrace
// more, shared by every step from then on, and engCloseStep for each step
// started after it. A step still running then is recorded in stuck and
// left behind.
type engCloser struct {
	ctx     context.Context
	abort   func()
	expired chan struct{} // closed engCloseGrace after ctx ended; nil before
	stuck   []string
}

// wait runs step and reports whether it returned in time.
func (c *engCloser) wait(name string, step func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		step()
	}()
	if c.expired == nil {
		select {
		case <-done:
			return true
		case <-c.ctx.Done():
			c.abort()
			expired := make(chan struct{})
			time.AfterFunc(engCloseGrace, func() { close(expired) })
			c.expired = expired
		}
	}
	select {
	case <-done:
		return true
	case <-c.expired:
	}
	t := time.NewTimer(engCloseStep) // out of time: a step that needs no I/O still ends
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		c.stuck = append(c.stuck, name)
		return false
	}
}

// engCloseStep is how long a step of Close may take once the grace has
// run out.
const engCloseStep = 10 * time.Millisecond

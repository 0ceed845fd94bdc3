package disk

import (
	"context"
	"fmt"
	"strings"
	"time"

	"strata/blockdev"
)

// Close stops accepting operations, writes everything queued, waits for
// the writes, stops every goroutine it started, writes the index
// checkpoint (checkpoint_write.go; not when ctx ended first, the device
// failed or recovery is none: the next Open then scans) and syncs the
// device. If
// ctx ends first, queued entries not yet in a buffer are dropped (counted)
// and Close returns ctx's error once the goroutines have stopped. The
// device stays open.
//
// A device that does not answer holds Close at most closeGrace (1s)
// and a few closeStep past ctx: each step (in-flight operations,
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

// closeGrace is how long Close still waits for its goroutines to stop
// once its ctx has ended (they were told to abort, which takes a moment
// unless the device hangs).
const closeGrace = time.Second

func (e *Engine) close(ctx context.Context) error {
	c := closer{ctx: ctx, abort: func() { close(e.abort) }}
	c.wait("in-flight operations", e.gate.shut)
	for _, f := range e.flush {
		close(f.stop)
	}
	c.wait("flushers", e.flushWG.Wait)
	close(e.stopReclaim)
	c.wait("reclaimers and prober", e.wg.Wait)
	c.wait("I/O workers", e.rt.stop)
	if len(c.stuck) == 0 && c.expired == nil && e.opts.Recovery != RecoveryNone {
		c.wait("checkpoint", func() {
			if err := e.writeCheckpoint(); err != nil {
				e.opts.Logger.Warn("disk: close: no index checkpoint; the next start scans the regions", "reason", err)
			}
		})
	}
	var serr error
	synced := c.wait("sync", func() { serr = e.dev.Sync() })
	switch {
	case len(c.stuck) > 0:
		e.opts.Logger.Error("disk: close: the device did not answer; giving up on it: entries queued or in flight are lost, and unsynced writes may be; the next start recovers as after a crash",
			"waiting_for", strings.Join(c.stuck, ", "), "queued_bytes", e.queued.Load(), "pending_keys", e.pending.len())
		return fmt.Errorf("disk: close: %w (%s): %w", ErrDeviceTimeout, strings.Join(c.stuck, ", "), ctx.Err())
	case c.expired != nil:
		return fmt.Errorf("disk: close: %w", ctx.Err())
	case synced && serr != nil:
		return fmt.Errorf("disk: close: sync: %w", serr)
	}
	return nil
}

// closer runs Close's steps, each on a goroutine of its own, and waits
// for each until ctx ends; then it aborts (once) and waits closeGrace
// more, shared by every step from then on, and closeStep for each step
// started after it. A step still running then is recorded in stuck and
// left behind.
type closer struct {
	ctx     context.Context
	abort   func()
	expired chan struct{} // closed closeGrace after ctx ended; nil before
	stuck   []string
}

// wait runs step and reports whether it returned in time.
func (c *closer) wait(name string, step func()) bool {
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
			time.AfterFunc(closeGrace, func() { close(expired) })
			c.expired = expired
		}
	}
	select {
	case <-done:
		return true
	case <-c.expired:
	}
	t := time.NewTimer(closeStep) // out of time: a step that needs no I/O still ends
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		c.stuck = append(c.stuck, name)
		return false
	}
}

// closeStep is how long a step of Close may take once the grace has
// run out.
const closeStep = 10 * time.Millisecond

// CloseDevice closes dev after Close, waiting until ctx ends and
// closeGrace more: a device that has not answered by then is left open
// and the error wraps ErrDeviceTimeout. Do not call it when Close returned
// ErrDeviceTimeout: the device's Close would wait for the I/O it never
// ends.
func CloseDevice(ctx context.Context, dev blockdev.Device) error {
	var err error
	w := closer{ctx: ctx, abort: func() {}}
	if !w.wait("device close", func() { err = dev.Close() }) {
		return fmt.Errorf("disk: close device: %w", ErrDeviceTimeout)
	}
	return err
}

package hybrid

import (
	"log/slog"
	"runtime/debug"
	"time"

	"strata/hybrid/disk"
)

// warmer reads the hot set the last clean stop recorded (WriteDown, then
// each engine's checkpoint) back into the memory tier after Open, in a
// goroutine of its own, so that the first minutes after a restart serve
// memory hits as before without holding up the start: until an entry is
// back, its Get is a disk hit.
//
// It takes the engines' lists round-robin, hottest first, reads each
// entry in its own goroutine (disk.Engine.ReadHot: the key comes from the
// entry, checked like any read) and stores it with memory.Cache.SetWarm,
// which never replaces a live entry: a value a client set since the
// start stays. It stops at Options.WarmBytes, paces itself to
// Options.WarmRate bytes per second, and ends early on Close (stop, then
// done).
type warmer struct {
	stop chan struct{}
	done chan struct{}
}

// startWarm starts the warm-up if any engine brought a hot set back.
func (c *Cache) startWarm() {
	if c.disks == nil || c.opts.WarmBytes < 0 {
		return
	}
	sets := make([][]uint64, len(c.disks.engs))
	n := 0
	for i, e := range c.disks.engs {
		sets[i] = e.HotSet()
		n += len(sets[i])
	}
	if n == 0 {
		return
	}
	c.warm = &warmer{stop: make(chan struct{}), done: make(chan struct{})}
	go c.warmLoop(sets)
}

// stopWarm ends the warm-up and waits for its goroutine.
func (c *Cache) stopWarm() {
	if c.warm != nil {
		close(c.warm.stop)
		<-c.warm.done
		c.warm = nil
	}
}

func (c *Cache) warmLoop(sets [][]uint64) {
	w := c.warm
	defer close(w.done)
	log := c.opts.Disk.Logger
	if log == nil {
		log = slog.Default()
	}
	defer func() {
		if r := recover(); r != nil {
			log.Error("cache: panic in the hot set warm-up; it stops", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	t0 := time.Now()
	var entries, bytes int64
	var buf []byte
	for i := 0; bytes < c.opts.WarmBytes; i++ {
		more := false
		for j, set := range sets {
			if i >= len(set) {
				continue
			}
			more = true
			if n, ok := c.warmOne(c.disks.engs[j], set[i], &buf); ok {
				entries++
				bytes += int64(n)
			}
		}
		if !more || !w.pace(t0, bytes, c.opts.WarmRate) {
			break
		}
	}
	log.Info("cache: hot set read back into memory", "entries", entries, "bytes", bytes, "took", time.Since(t0))
}

// warmOne reads the entry under hash h from e into memory and returns its
// key+value bytes.
//
// A Remove (a purge) of the key racing with it: Remove deletes from
// memory, then from disk. A copy stored before the memory delete is
// deleted by it; one stored after the disk remove is caught by the check
// below, which deletes it again (at worst a miss, when a newer Insert
// replaced it meanwhile). Only a store between the two steps slips
// through, the same narrow window a promotion has (see Cache).
func (c *Cache) warmOne(e *disk.Engine, h uint64, buf *[]byte) (int, bool) {
	kv, klen, exp, ok := e.ReadHot(h, (*buf)[:0])
	*buf = kv
	if !ok || !c.mem.SetWarm(kv[:klen], kv[klen:], expiryTime(exp)) {
		return 0, false
	}
	if !e.Contains(kv[:klen]) {
		c.mem.Delete(kv[:klen])
		return 0, false
	}
	return len(kv), true
}

// pace sleeps until bytes are due at rate bytes per second since t0; false
// if stop came first.
func (w *warmer) pace(t0 time.Time, bytes, rate int64) bool {
	due := time.Duration(float64(bytes) / float64(rate) * float64(time.Second))
	ahead := due - time.Since(t0)
	if ahead <= 0 {
		select {
		case <-w.stop:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(ahead)
	defer t.Stop()
	select {
	case <-w.stop:
		return false
	case <-t.C:
		return true
	}
}

package disk

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"strata/blockdev"
)

const crashChildEnv = "STRATA_HYBRID_CRASH_CHILD"

// testOpts is a small, fast configuration: 1 MiB regions, 64 KiB buffers,
// writes as soon as possible. The disk is never taken out of service
// (ErrorLimit -1): the fault tests count single failures; the health
// tests set a limit.
func testOpts() Options {
	return Options{
		RegionSize: 1 << 20, BufferSize: 64 << 10, Flushers: 2, Reclaimers: 1,
		QueueBytes: 4 << 20, FlushDelay: -1, ReadWorkers: 4, ErrorLimit: -1,
		// A generous read deadline: on a loaded machine (-race, parallel
		// packages) the default 250ms turned slow reads into misses that
		// tests took for lost entries. The deadline's own tests set theirs.
		ReadTimeout: 30 * time.Second,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func newMem(t testing.TB, size int64) *blockdev.MemDevice {
	t.Helper()
	d, err := blockdev.NewMem(size, 512)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func openT(t testing.TB, dev blockdev.Device, o Options) *Engine {
	t.Helper()
	e, err := Open(dev, o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func closeT(t testing.TB, e *Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkBuffers(t, e)
}

// checkBuffers fails t if a read buffer is still out of the engine's pool
// (a Value not released, or a buffer leaked) or one was returned twice.
func checkBuffers(t testing.TB, e *Engine) {
	t.Helper()
	if s := e.Stats(); s.ReadBuffersOut != 0 || s.BadReleases != 0 {
		t.Fatalf("read buffers out of the pool after Close: %d, returned twice: %d", s.ReadBuffersOut, s.BadReleases)
	}
}

// settle waits until nothing is queued or pending: every accepted
// operation has been written and indexed.
func settle(t testing.TB, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.queued.Load() != 0 || e.pending.len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("engine did not settle: queued=%d pending=%d", e.queued.Load(), e.pending.len())
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// dropCheckpoint clears the checkpoint descriptor beside both superblock
// copies, so the next Open scans the regions as after a crash: for tests
// of the scan that close cleanly first.
func dropCheckpoint(t testing.TB, dev blockdev.Device) {
	t.Helper()
	bs := dev.BlockSize()
	b := blockdev.AlignedBuffer(bs, bs)
	for i := range superblockCopies {
		if _, err := dev.ReadAt(b, int64(i*bs)); err != nil {
			t.Fatal(err)
		}
		clear(b[ckptDescOff:])
		if _, err := dev.WriteAt(b, int64(i*bs)); err != nil {
			t.Fatal(err)
		}
	}
}

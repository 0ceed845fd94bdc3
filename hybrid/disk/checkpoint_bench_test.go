package disk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"strata/blockdev"
)

// TestCheckpointStartTime (STRATA_CKPT_BENCH=1; STRATA_CKPT_ENTRIES,
// default 1,000,000; STRATA_CKPT_VALUE bytes per value, default 100)
// measures start to ready of an engine on an O_DIRECT file holding that
// many entries (STRATA_CKPT_KEEP=path keeps the file there, closed
// cleanly, for timing the binary's own start on it): after a clean close
// (the checkpoint is loaded) and with no checkpoint, as after a SIGKILL
// (the regions are scanned). Both starts must find every entry.
func TestCheckpointStartTime(t *testing.T) {
	if os.Getenv("STRATA_CKPT_BENCH") == "" {
		t.Skip("set STRATA_CKPT_BENCH=1 to measure start times with 1M entries on disk")
	}
	n, vlen := envInt("STRATA_CKPT_ENTRIES", 1_000_000), envInt("STRATA_CKPT_VALUE", 100)
	path := filepath.Join(t.TempDir(), "ckpt.cache")
	if p := os.Getenv("STRATA_CKPT_KEEP"); p != "" {
		path = p // kept, checkpointed, for timing the binary's start on it
	}
	size := alignUp(int64(n)*int64(vlen+160)+256<<20, 1<<20)
	dev, err := blockdev.Open(path, blockdev.Options{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	o := Options{Logger: testOpts().Logger}
	e := openT(t, dev, o)
	t0 := time.Now()
	val := make([]byte, vlen)
	for i := range n {
		k := fmt.Appendf(nil, "key-%09d", i)
		for e.WriteRoom() < 1<<20 {
			time.Sleep(100 * time.Microsecond)
		}
		if !e.Insert(k, val, time.Time{}) {
			t.Fatalf("insert %d dropped", i)
		}
	}
	settle(t, e)
	t.Logf("filled %d entries in %v; index %d bytes", n, time.Since(t0), e.Stats().IndexBytes)
	closeTimed(t, e, "clean close (flush, checkpoint, sync)")

	e = openTimed(t, dev, o, n, "start after a clean close (checkpoint)")
	closeTimed(t, e, "clean close again")
	dropCheckpoint(t, dev) // what a SIGKILL after the start leaves: no descriptor
	e = openTimed(t, dev, o, n, "start after a crash (scan)")
	closeTimed(t, e, "clean close")
	t.Logf("device: %s, %d bytes", path, size)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func openTimed(t *testing.T, dev blockdev.Device, o Options, n int, what string) *Engine {
	t.Helper()
	t0 := time.Now()
	e := openT(t, dev, o)
	took := time.Since(t0)
	if got := e.Stats().Recovered; got != uint64(n) {
		t.Fatalf("%s: recovered %d of %d", what, got, n)
	}
	t.Logf("%s: %v (%d batches scanned)", what, took, e.Stats().RecoveredBatches)
	return e
}

func closeTimed(t *testing.T, e *Engine, what string) {
	t.Helper()
	t0 := time.Now()
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %v", what, time.Since(t0))
}

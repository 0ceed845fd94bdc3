package e2e

// TestDiskFaults runs the real binary with its cache on a FUSE file that
// hangs or fails on command (fusedisk_test.go).

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	faultReadTimeout = 200 * time.Millisecond
	faultShutdown    = 2 * time.Second
	logTakenOut      = "disk taken out of service"
	logBack          = "disk back in service"
)

// TestDiskFaults: with the device hung, every request is answered within
// the read deadline and the origin's time, and the disk is taken out of
// service; when the device answers again, it is back. The same when the
// device fails with EIO. Each change is logged once, device errors are
// rate-limited, /readyz stays 200 throughout. With the device hung,
// SIGTERM ends the process within limits.shutdown_timeout + 5 s, exit 1
// (the device did not answer), saying so.
func TestDiskFaults(t *testing.T) {
	disk, path := mountFuseDisk(t, 64<<20)
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Config: fmt.Sprintf(`origins: [{url: %s}]
cache:
  disk:
`, o.URL("origin")) + faultDiskYAML(),
		Args: []string{"-cache-path", path, "-cache-size", "64MiB"}})
	t.Cleanup(func() { disk.set(diskOK) }) // before the process is killed
	started := time.Now()

	evictToDisk(t, s, 100)
	awaitDiskHit(t, s.URL+fillerPath(0))
	budget := faultReadTimeout + originTime(t, o, 0, 30) + time.Second // + slack for a busy machine
	faultEpisode(t, s, disk, diskHang, 0, 30, budget, 1)
	fetchFillers(t, s, 100, 200) // new objects: memory evicts 100.. to disk
	awaitDiskHit(t, s.URL+fillerPath(100))
	faultEpisode(t, s, disk, diskFail, 100, 130, budget, 2)

	disk.set(diskHang)
	getAllWithin(t, s, 0, 60, budget) // some were evicted to disk again: their reads hang
	wantErrorLinesLimited(t, s, started)
	took := stopHung(t, s)
	t.Logf("request budget %v; SIGTERM with the device hung took %v", budget, took)
}

// faultDiskYAML is the rest of cache.disk (indented under it) and limits
// for the FUSE tests: small regions, a short read deadline, out of
// service after 5 failures, probed every 200ms.
func faultDiskYAML() string {
	return fmt.Sprintf(`    region_size: 4MiB
    buffer_size: 1MiB
    read_timeout: %v
    error_limit: 5
    error_window: 10s
    probe_interval: 200ms
limits:
  shutdown_timeout: %v
`, faultReadTimeout, faultShutdown)
}

// faultEpisode switches disk to mode while fillers [from, to) are
// requested: each answered within budget, the disk taken out of service
// (the nth time), /readyz still 200; then back to normal, and the disk
// back in service. Each change logged once. A hung device counts against
// the disk only once it has held a read for a second (disk.stuckAfter):
// until the disk is out, fillers from to on (on disk too, evictToDisk)
// are requested one at a time, each within budget.
func faultEpisode(t *testing.T, s *strata, disk *fuseDisk, mode int32, from, to int, budget time.Duration, nth int) {
	t.Helper()
	disk.set(mode)
	getAllWithin(t, s, from, to, budget)
	for i := to; strings.Count(s.Output(), logTakenOut) < nth && i < to+(to-from); i++ {
		getAllWithin(t, s, i, i+1, budget)
		time.Sleep(50 * time.Millisecond)
	}
	awaitLog(t, s, logTakenOut, nth)
	wantMetric(t, s, "strata_disk_online", 0)
	wantReady(t, s)
	disk.set(diskOK)
	awaitLog(t, s, logBack, nth)
	wantMetric(t, s, "strata_disk_online", 1)
}

// wantErrorLinesLimited: device errors were logged at most once a second
// since started, with the count of those suppressed.
func wantErrorLinesLimited(t *testing.T, s *strata, started time.Time) {
	t.Helper()
	failures := metric(t, s.Admin, "strata_disk_io_errors_total") + metric(t, s.Admin, "strata_disk_read_timeouts_total")
	if n, most := deviceErrorLines(s), int(time.Since(started)/time.Second)+1; n > most || failures < float64(3*most) ||
		!strings.Contains(s.Output(), "suppressed=") {
		t.Errorf("%d device error lines in %v for %v failures, want at most %d, one saying how many were suppressed",
			n, time.Since(started), failures, most)
	}
}

// stopHung sends SIGTERM while the device hangs: the process must exit 1
// within shutdown_timeout + 5 s, saying the device did not answer.
func stopHung(t *testing.T, s *strata) time.Duration {
	t.Helper()
	// Connections the client opened and never used count as busy for 5 s
	// (fasthttp, as net/http): close them, so draining is quick and the
	// deadline is spent on the cache.
	http.DefaultClient.CloseIdleConnections()
	t0 := time.Now()
	err := s.Stop()
	took := time.Since(t0)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || took > faultShutdown+5*time.Second {
		t.Fatalf("SIGTERM with the device hung: %v after %v, want exit 1 within %v", err, took, faultShutdown+5*time.Second)
	}
	if !strings.Contains(s.Output(), "the device did not answer") {
		t.Error("shutdown did not say the device did not answer")
	}
	return took
}

func fillerPath(i int) string { return fmt.Sprintf("/obj/256k/filler?max-age=600&n=%d", i) }

// fetchFillers GETs fillers [from, to) through s, one after the other.
func fetchFillers(t *testing.T, s *strata, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if resp, _ := get(t, s.URL+fillerPath(i)); resp.StatusCode != 200 {
			t.Fatalf("filler %d: %s", i, resp.Status)
		}
	}
}

// deviceErrorLines counts the device error lines s has logged.
func deviceErrorLines(s *strata) int {
	n := 0
	for _, line := range strings.Split(s.Output(), "\n") {
		for _, m := range []string{"disk read failed", "flush write failed", "disk read timed out", "disk: reclaim:"} {
			if strings.Contains(line, m) {
				n++
			}
		}
	}
	return n
}

// originTime is the slowest of the origin's answers for fillers
// [from, to), fetched from it directly and concurrently.
func originTime(t *testing.T, o *process, from, to int) time.Duration {
	t.Helper()
	var mu sync.Mutex
	var slowest time.Duration
	var wg sync.WaitGroup
	for i := from; i < to; i++ {
		wg.Go(func() {
			t0 := time.Now()
			get(t, o.URL("origin")+fillerPath(i))
			mu.Lock()
			slowest = max(slowest, time.Since(t0))
			mu.Unlock()
		})
	}
	wg.Wait()
	return slowest
}

// getAllWithin GETs fillers [from, to) through s at once: each must be
// whole and correct, within budget.
func getAllWithin(t *testing.T, s *strata, from, to int, budget time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	for i := from; i < to; i++ {
		wg.Go(func() {
			want := objectBytes("/obj/256k/filler", 0, "", 0, 256<<10)
			t0 := time.Now()
			resp, body := get(t, s.URL+fillerPath(i))
			took := time.Since(t0)
			if resp.StatusCode != 200 || !bytes.Equal(body, want) || took > budget {
				t.Errorf("filler %d: %s, %d bytes (correct %v) after %v; want 200 and the object within %v",
					i, resp.Status, len(body), bytes.Equal(body, want), took, budget)
			}
		})
	}
	wg.Wait()
}

// awaitLog waits up to 5 s until s has logged a line containing msg n
// times, and fails if it logs it more often.
func awaitLog(t *testing.T, s *strata, msg string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(s.Output(), msg) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.Count(s.Output(), msg); got != n {
		t.Fatalf("%q logged %d times, want %d", msg, got, n)
	}
}

// wantMetric checks a metric without labels.
func wantMetric(t *testing.T, s *strata, name string, want float64) {
	t.Helper()
	if got := metric(t, s.Admin, name); got != want {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

// wantReady checks that /readyz and /healthz answer 200.
func wantReady(t *testing.T, s *strata) {
	t.Helper()
	for _, p := range []string{"/readyz", "/healthz"} {
		if resp, _ := get(t, s.Admin+p); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s, want 200", p, resp.Status)
		}
	}
}

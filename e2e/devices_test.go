package e2e

// TestTwoDevicesOneFailing runs the real binary with two cache devices
// (cache.disk.devices): a FUSE file that fails on command
// (fusedisk_test.go) and a plain file.

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTwoDevicesOneFailing: keys spread over both devices; when the FUSE
// device fails (EIO), every request is still answered whole and correct,
// that device alone is taken out of service (logged once, with its
// index; strata_disk_device_online says which), and the keys on the
// other device keep being answered from disk. When it answers again it
// is back in service, logged once.
func TestTwoDevicesOneFailing(t *testing.T) {
	disk, fusePath := mountFuseDisk(t, 64<<20)
	dir := t.TempDir()
	o := startOrigin(t)
	s := startStrataConfig(t, dir, fmt.Sprintf(`origins: [{url: %s}]
cache:
  memory: {capacity: 16MiB}
  promotion: never
  disk:
    devices:
      - {path: %s, size: 64MiB}
      - {path: %s, size: 64MiB}
`, o.URL("origin"), fusePath, filepath.Join(dir, "b.cache"))+faultDiskYAML())
	t.Cleanup(func() { disk.set(diskOK) }) // before the process is killed
	if n := strings.Count(s.Output(), "cache device opened"); n != 2 {
		t.Fatalf("%d devices logged as opened, want 2", n)
	}

	const n = 100
	evictToDisk(t, s, n) // 25 MiB through a 16 MiB memory tier
	awaitDiskHit(t, s.URL+fillerPath(0))
	before := diskHits(t, s, n)
	online := func(i int) float64 {
		return metric(t, s.Admin, fmt.Sprintf(`strata_disk_device_online{device="%d"}`, i))
	}
	if before < 10 || online(0) != 1 || online(1) != 1 {
		t.Fatalf("healthy: %d of %d fillers from disk, devices online %v %v", before, n, online(0), online(1))
	}

	disk.set(diskFail)
	budget := faultReadTimeout + originTime(t, o, 0, n) + time.Second
	getAllWithin(t, s, 0, n, budget) // each whole and correct
	awaitLog(t, s, logTakenOut, 1)
	if line := logLine(s, logTakenOut); !strings.Contains(line, "device=0") {
		t.Errorf("out of service: %q, want device=0", line)
	}
	wantMetric(t, s, "strata_disk_online", 0)
	if online(0) != 0 || online(1) != 1 {
		t.Errorf("devices online %v %v, want 0 1", online(0), online(1))
	}
	wantReady(t, s)
	during := diskHits(t, s, n) // device 0 skipped, device 1 serves
	if during == 0 || metric(t, s.Admin, "strata_disk_offline_gets_total") == 0 {
		t.Fatalf("device 0 out of service: %d of %d fillers from disk (%d before), want some from device 1", during, n, before)
	}
	t.Logf("fillers from disk: %d of %d healthy, %d with device 0 out of service", before, n, during)

	disk.set(diskOK)
	awaitLog(t, s, logBack, 1)
	wantMetric(t, s, "strata_disk_online", 1)
	getAllWithin(t, s, 0, n, budget)
	if got := strings.Count(s.Output(), logTakenOut); got != 1 {
		t.Errorf("out of service logged %d times, want once", got)
	}
}

// diskHits GETs fillers [0, n) one after the other, each whole and
// correct, and counts those answered from disk.
func diskHits(t *testing.T, s *strata, n int) int {
	t.Helper()
	hits := 0
	want := objectBytes("/obj/256k/filler", 0, "", 0, 256<<10)
	for i := range n {
		resp, body := get(t, s.URL+fillerPath(i))
		if resp.StatusCode != 200 || !bytes.Equal(body, want) {
			t.Fatalf("filler %d: %s, %d bytes (correct %v)", i, resp.Status, len(body), bytes.Equal(body, want))
		}
		if strings.Contains(cacheStatus(resp.Header), "detail=disk") {
			hits++
		}
	}
	return hits
}

// logLine returns the first line of s's output containing msg.
func logLine(s *strata, msg string) string {
	for _, line := range strings.Split(s.Output(), "\n") {
		if strings.Contains(line, msg) {
			return line
		}
	}
	return ""
}

package e2e

// A binary upgrade (SIGUSR2) of the real binary under wrk load.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wrkRun is what one wrk run reports.
type wrkRun struct {
	requests, non2xx, socketErrs int
	out                          string
}

var (
	wrkRequestsRE = regexp.MustCompile(`(\d+) requests in`)
	wrkNon2xxRE   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocketRE   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// runWrk runs wrk (2 threads, 16 connections) for d against base with
// script, and parses its summary.
func runWrk(t *testing.T, wrk, script, base string, d time.Duration) wrkRun {
	t.Helper()
	out, err := exec.Command(wrk, "-t2", "-c16", "-d"+strconv.Itoa(int(d.Seconds()))+"s", "--latency",
		"-s", script, base).CombinedOutput()
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	r := wrkRun{out: string(out)}
	m := wrkRequestsRE.FindStringSubmatch(r.out)
	if m == nil {
		t.Fatalf("wrk: no request count in:\n%s", out)
	}
	r.requests, _ = strconv.Atoi(m[1])
	if m := wrkNon2xxRE.FindStringSubmatch(r.out); m != nil {
		r.non2xx, _ = strconv.Atoi(m[1])
	}
	if m := wrkSocketRE.FindStringSubmatch(r.out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			r.socketErrs += n
		}
	}
	return r
}

// hitRatio runs wrk for d and returns 1 − origin requests ÷ requests.
func hitRatio(t *testing.T, wrk, script, base string, o *process, d time.Duration) (float64, wrkRun) {
	t.Helper()
	before := getOriginStats(t, o).Requests
	r := runWrk(t, wrk, script, base, d)
	fetched := getOriginStats(t, o).Requests - before
	return 1 - float64(fetched)/float64(max(r.requests, 1)), r
}

var upgradePIDRE = regexp.MustCompile(`upgrade: new binary started .*pid=(\d+)`)

// TestBinaryUpgradeUnderLoad: SIGUSR2 while wrk loops over 200 cached
// URLs: no request fails (no non-2xx, no socket error), the old process
// exits 0, the new one serves on the same sockets, and its hit ratio is
// at least 95% of the old one's. write_policy insertion puts every object
// on the device as it is stored, so what the new process finds does not
// depend on the memory tier being written down at stop.
func TestBinaryUpgradeUnderLoad(t *testing.T) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk not installed: the binary upgrade under load is not tested")
	}
	sock := filepath.Join(t.TempDir(), "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Config: fmt.Sprintf("origins: [{url: %s}]\ncache: {write_policy: insertion}\n", o.URL("origin")),
		Env: []string{"NOTIFY_SOCKET=" + sock}})
	const urls = 200
	for i := range urls {
		if resp, _ := get(t, fmt.Sprintf("%s/obj/4k/u%d?max-age=600", s.URL, i)); resp.StatusCode != 200 {
			t.Fatalf("warm %d: %s", i, resp.Status)
		}
	}
	script := filepath.Join(t.TempDir(), "urls.lua")
	lua := fmt.Sprintf("request = function()\n  return wrk.format(\"GET\", string.format(\"/obj/4k/u%%d?max-age=600\", math.random(0, %d)))\nend\n", urls-1)
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := hitRatio(t, wrk, script, s.URL, o, 2*time.Second)

	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = s.cmd.Process.Signal(syscall.SIGUSR2)
	}()
	during := runWrk(t, wrk, script, s.URL, 6*time.Second)
	m := upgradePIDRE.FindStringSubmatch(s.Output())
	if m == nil {
		t.Fatalf("no new process started; output:\n%s", s.Output())
	}
	pid, _ := strconv.Atoi(m[1])
	t.Cleanup(func() { stopPID(t, pid) }) // before the harness waits for the output to end
	if err := s.Wait(10 * time.Second); err != nil {
		t.Fatalf("old process after the upgrade: %v", err)
	}
	if during.non2xx != 0 || during.socketErrs != 0 {
		t.Errorf("during the upgrade: %d non-2xx, %d socket errors of %d requests\n%s",
			during.non2xx, during.socketErrs, during.requests, during.out)
	}
	after, r := hitRatio(t, wrk, script, s.URL, o, 2*time.Second)
	if r.non2xx != 0 || r.socketErrs != 0 {
		t.Errorf("after the upgrade: %d non-2xx, %d socket errors", r.non2xx, r.socketErrs)
	}
	if after < 0.95*before {
		t.Errorf("hit ratio after the upgrade %.4f < 95%% of before (%.4f)", after, before)
	}
	// systemd heard: the old process ready, then its hand-over of the main
	// PID, then the new process ready.
	var heard []string
	buf := make([]byte, 256)
	for len(heard) < 3 {
		_ = notify.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := notify.Read(buf)
		if err != nil {
			break
		}
		heard = append(heard, string(buf[:n]))
	}
	if want := []string{"READY=1", "MAINPID=" + strconv.Itoa(pid), "READY=1"}; !slices.Equal(heard, want) {
		t.Errorf("notifications %q, want %q", heard, want)
	}
	t.Logf("upgrade under load: %d requests, 0 failed; hit ratio before %.4f, after %.4f; pause %v; wrk: %s",
		during.requests, before, after, upgradePause(s.Output()), wrkLatencyRE.FindString(during.out))
}

// stopPID ends a process the test did not start (the new process of an
// upgrade): SIGTERM, then SIGKILL after 10 s.
func stopPID(t *testing.T, pid int) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Errorf("new process %d still runs 10s after SIGTERM: killed", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie, left to a parent that does
// not reap it, does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestBinaryUpgradeRefused: a new process whose config does not load
// never takes over: the old one logs that the upgrade failed and serves
// on, with its cache; a second SIGUSR2 then may try again.
func TestBinaryUpgradeRefused(t *testing.T) {
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Config: fmt.Sprintf("origins: [{url: %s}]\n", o.URL("origin"))})
	url := s.URL + "/obj/1k/kept?max-age=600"
	if resp, _ := get(t, url); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "strata.yaml"), []byte("bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		if err := s.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for strings.Count(s.Output(), "upgrade failed, this process serves on") < n {
			if time.Now().After(deadline) {
				t.Fatalf("no failed upgrade #%d logged; output:\n%s", n, s.Output())
			}
			time.Sleep(20 * time.Millisecond)
		}
		resp, _ := get(t, url)
		if resp.StatusCode != 200 || !strings.Contains(cacheStatus(resp.Header), "hit") {
			t.Fatalf("after failed upgrade #%d: %s %q, want a hit", n, resp.Status, cacheStatus(resp.Header))
		}
	}
	if !strings.Contains(s.Output(), "bogus") {
		t.Errorf("the new process did not say what is wrong with the config")
	}
}

var (
	wrkLatencyRE = regexp.MustCompile(`Latency +\S+ +\S+ +\S+`)
	logTimeRE    = regexp.MustCompile(`(?m)^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) .*(upgrade: handing over|strata listening on)`)
)

// upgradePause is the time from the old process's hand-over to the new
// one's listening line (0 when the log does not say).
func upgradePause(out string) time.Duration {
	var from time.Time
	for _, m := range logTimeRE.FindAllStringSubmatch(out, -1) {
		at, err := time.Parse("2006/01/02 15:04:05.999999", m[1])
		if err != nil {
			return 0
		}
		if m[2] == "upgrade: handing over" {
			from = at
		} else if !from.IsZero() {
			return at.Sub(from)
		}
	}
	return 0
}

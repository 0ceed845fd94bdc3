package e2e

// configs/systemd/strata.service and the notify protocol of the real
// binary.

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSystemdUnitVerifies: systemd-analyze verify accepts the unit
// (ExecStart pointed at the binary under test, which it checks exists)
// without a warning about it.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: configs/systemd/strata.service is not verified")
	}
	unit, err := os.ReadFile("../configs/systemd/strata.service")
	if err != nil {
		t.Fatal(err)
	}
	const exe = "/usr/local/bin/strata"
	if !strings.Contains(string(unit), "ExecStart="+exe+" ") {
		t.Fatalf("the unit's ExecStart does not run %s", exe)
	}
	path := filepath.Join(t.TempDir(), "strata.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), exe, strataBin(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	var about []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "strata") { // the unit's and the binary's paths
			about = append(about, line)
		}
	}
	if err != nil || len(about) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestSystemdNotify: under a NOTIFY_SOCKET, strata says READY=1 once it
// serves, RELOADING=1 (with MONOTONIC_USEC) then READY=1 around a reload,
// and STOPPING=1 at SIGTERM.
func TestSystemdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Skipf("no unixgram socket: %v", err)
	}
	defer c.Close()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin"), Env: []string{"NOTIFY_SOCKET=" + sock}})
	next := func() string {
		t.Helper()
		buf := make([]byte, 512)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v; output:\n%s", err, s.Output())
		}
		return string(buf[:n])
	}
	if got := next(); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	if resp, _ := get(t, s.URL+"/obj/1k/a?max-age=60"); resp.StatusCode != 200 {
		t.Fatalf("after READY=1: %s", resp.Status)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if got := next(); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Errorf("at SIGHUP: %q, want RELOADING=1 and MONOTONIC_USEC", got)
	}
	if got := next(); got != "READY=1" {
		t.Errorf("after the reload: %q, want READY=1", got)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "STOPPING=1" {
		t.Errorf("at SIGTERM: %q, want STOPPING=1", got)
	}
	if err := s.Wait(15 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}

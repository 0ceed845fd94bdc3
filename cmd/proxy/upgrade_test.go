package main

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"strata/blockdev"
	"strata/configs"
)

// TestInherit: STRATA_UPGRADE_FDS names the pipe to the old process and
// the sockets it handed over; bind takes an inherited socket by name and
// binds the others; a malformed value is refused; the variable is unset
// once read.
func TestInherit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// inherit owns (and closes) what it is given: give it copies.
	t.Setenv(upgradeEnv, "ready:"+strconv.Itoa(dup(t, w))+",strata-http:"+strconv.Itoa(dup(t, f)))
	w.Close()
	a := &app{log: slog.New(slog.DiscardHandler)}
	got, err := a.bind("strata-http", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.Addr().String() != ln.Addr().String() {
		t.Errorf("bound %v, want the inherited %v", got.Addr(), ln.Addr())
	}
	if os.Getenv(upgradeEnv) != "" {
		t.Errorf("%s still set", upgradeEnv)
	}
	if !a.upgrade.upgrading() {
		t.Fatal("no pipe to the old process")
	}
	other, err := a.bind("admin-http", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	a.upgrade.tellParent()
	buf := make([]byte, 8)
	if n, _ := r.Read(buf); string(buf[:n]) != "go\n" {
		t.Errorf("the old process read %q, want go", buf[:n])
	}
	if len(a.upgrade.bound) != 2 {
		t.Errorf("%d listeners recorded for a later upgrade, want 2", len(a.upgrade.bound))
	}

	for _, bad := range []string{"ready", "x:1", "strata-http:abc", "strata-http:99999"} {
		t.Setenv(upgradeEnv, bad)
		var u upgradeState
		if err := u.inherit(); err == nil {
			t.Errorf("%s=%q accepted", upgradeEnv, bad)
		}
	}
}

func dup(t *testing.T, f *os.File) int {
	t.Helper()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestOpenDevicesWaitsForEveryDevice: the new process of an upgrade waits
// for the old one to release each of its cache devices, not only the
// first (telling the old one to go must not end the wait for the rest).
func TestOpenDevicesWaitsForEveryDevice(t *testing.T) {
	dir := t.TempDir()
	opts := blockdev.Options{Size: 1 << 20, Direct: new(false), Logger: slog.New(slog.DiscardHandler)}
	var parts []configs.DevicePart
	var held []blockdev.Device
	for _, name := range []string{"a.dev", "b.dev"} {
		p := filepath.Join(dir, name)
		d, err := openDevice(p, opts) // the old process's hold
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, d)
		parts = append(parts, configs.DevicePart{Path: p, Options: opts})
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t.Setenv(upgradeEnv, "ready:"+strconv.Itoa(dup(t, w))) // the new process of an upgrade
	w.Close()
	a := &app{log: slog.New(slog.DiscardHandler), shutdownTimeout: time.Second}
	// The old process lets its devices go one by one, as its shutdown
	// closes them.
	for i, d := range held {
		release := time.AfterFunc(time.Duration(i+1)*150*time.Millisecond, func() { _ = d.Close() })
		defer release.Stop()
	}
	devs, err := a.openDevices(parts)
	if err != nil {
		t.Fatalf("openDevices during an upgrade: %v", err)
	}
	closeDevices(devs)
	buf := make([]byte, 8)
	if n, _ := r.Read(buf); string(buf[:n]) != "go\n" {
		t.Errorf("the old process read %q, want go", buf[:n])
	}
}

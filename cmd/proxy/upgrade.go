package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"strata/blockdev"
)

// A binary upgrade (SIGUSR2): a new binary takes over without dropping a
// connection.
//
//  1. The old process starts the binary at its own path (os.Executable at
//     start: replace the file, then signal) with the same arguments, handing
//     it every listening socket (ExtraFiles) and a pipe, named in
//     STRATA_UPGRADE_FDS ("ready:3,strata-http:4,admin-http:5").
//  2. The new process loads and checks its config (a bad one ends it: the
//     old one serves on and logs that the upgrade failed), takes the
//     sockets instead of binding, and writes "go" on the pipe when it is
//     about to open the cache device (or, without one, once serving).
//  3. The old process then hands the service over to systemd
//     (MAINPID=new), answers every response with Connection: close for
//     upgradeDrain so its busy keep-alive clients reconnect between two
//     requests, then runs its normal shutdown: stop accepting, drain,
//     close the proxy and the cache (which releases the device), and exits.
//     New connections wait in the sockets' kernel backlog meanwhile.
//  4. The new process retries its device's exclusive open (blockdev.ErrBusy:
//     O_EXCL on a block device, flock on a file, so that two processes never
//     write one device) until the old one closed it, for at most its own
//     shutdown_timeout + upgradeSlack, opens the cache (recovering what the
//     old one wrote), and serves.
//
// The cache is kept: the new process finds on the device what the old one
// flushed at close. Clients see a pause of the old shutdown plus the new
// open, no error. A new process that fails after the old one let go exits
// with an error (systemd's Restart= starts a fresh one).

const (
	upgradeEnv   = "STRATA_UPGRADE_FDS"
	upgradeDrain = 300 * time.Millisecond // Connection: close on every response before the shutdown
	upgradeSlack = 15 * time.Second       // beyond the own shutdown_timeout, to wait for the device
	upgradeReady = 60 * time.Second       // for the new process to say "go"
	firstExtraFD = 3                      // ExtraFiles[0]'s descriptor in the child
)

// fileListener is a listener whose socket can be handed to a child.
type fileListener interface {
	net.Listener
	File() (*os.File, error)
}

// upgradeState is the app's part in upgrades, as old and as new process.
type upgradeState struct {
	exe       string                  // this binary's path, resolved at start
	bound     []namedListener         // every listener bound, for a later upgrade
	inherited map[string]net.Listener // sockets handed over by the old process, until taken
	parent    *os.File                // the pipe to the old process; nil once told or when none
	takeover  bool                    // the new process of an upgrade: the old one may still hold the devices
	child     *exec.Cmd               // the new process of an upgrade in progress
	answer    chan error              // the child's answer: nil for "go"
}

type namedListener struct {
	name string
	ln   net.Listener
}

// inherit reads STRATA_UPGRADE_FDS (once; unset afterwards), wrapping the
// sockets of an old process. It is a no-op outside an upgrade.
func (u *upgradeState) inherit() error {
	if u.inherited != nil {
		return nil
	}
	u.inherited = map[string]net.Listener{}
	spec := os.Getenv(upgradeEnv)
	if spec == "" {
		return nil
	}
	os.Unsetenv(upgradeEnv)
	for item := range strings.SplitSeq(spec, ",") {
		name, num, _ := strings.Cut(item, ":")
		fd, err := strconv.Atoi(num)
		if err != nil || fd < firstExtraFD {
			return fmt.Errorf("strata: %s: bad item %q", upgradeEnv, item)
		}
		f := os.NewFile(uintptr(fd), name)
		if name == "ready" {
			u.parent, u.takeover = f, true
			continue
		}
		ln, err := net.FileListener(f)
		f.Close() // FileListener dups it
		if err != nil {
			return fmt.Errorf("strata: inherited listener %s: %w", name, err)
		}
		u.inherited[name] = ln
	}
	return nil
}

// upgrading reports whether this process is the new one of an upgrade
// that has not yet told the old one to go.
func (u *upgradeState) upgrading() bool { return u.parent != nil }

// tellParent lets the old process go (once).
func (u *upgradeState) tellParent() {
	if u.parent == nil {
		return
	}
	_, _ = u.parent.WriteString("go\n")
	u.parent.Close()
	u.parent = nil
}

// bind returns the listener called name (e.g. "strata-http"): the one an
// old process handed over, else a new one on addr.
func (a *app) bind(name, addr string) (net.Listener, error) {
	if err := a.upgrade.inherit(); err != nil {
		return nil, err
	}
	ln, ok := a.upgrade.inherited[name]
	if ok {
		delete(a.upgrade.inherited, name)
		a.log.Info("listener taken over from the old process", "listener", name, "addr", ln.Addr(), "config", addr)
	} else {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, err
		}
	}
	a.upgrade.bound = append(a.upgrade.bound, namedListener{name, ln})
	return ln, nil
}

// openDeviceWait opens a cache device; the new process of an upgrade
// first lets the old one go (at its first device), then retries while the
// old one holds it: every device, since the old one releases them one by
// one as its shutdown closes them.
func (a *app) openDeviceWait(path string, opts blockdev.Options) (blockdev.Device, error) {
	if err := a.upgrade.inherit(); err != nil {
		return nil, err
	}
	if !a.upgrade.takeover {
		return openDevice(path, opts)
	}
	a.upgrade.tellParent()
	t0 := time.Now()
	deadline := t0.Add(a.shutdownTimeout + upgradeSlack)
	for logged := false; ; {
		dev, err := openDevice(path, opts)
		if !errors.Is(err, blockdev.ErrBusy) || time.Now().After(deadline) {
			if err == nil && logged {
				a.log.Info("cache device released by the old process", "path", path, "waited", time.Since(t0))
			}
			return dev, err
		}
		if !logged {
			a.log.Info("waiting for the old process to release the cache device", "path", path)
			logged = true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startUpgrade starts the new binary with this process's listeners. Its
// answer comes on a.upgrade.answer: nil once it asks this process to go,
// else why it will not take over.
func (a *app) startUpgrade() error {
	u := &a.upgrade
	if u.child != nil {
		return errors.New("strata: upgrade: one is already in progress")
	}
	if u.exe == "" {
		return errors.New("strata: upgrade: the binary's path is unknown")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("strata: upgrade: %w", err)
	}
	defer w.Close()
	files, spec := []*os.File{w}, []string{"ready:" + strconv.Itoa(firstExtraFD)}
	defer func() {
		for _, f := range files[1:] {
			f.Close()
		}
	}()
	for _, nl := range u.bound {
		fl, ok := nl.ln.(fileListener)
		if !ok {
			r.Close()
			return fmt.Errorf("strata: upgrade: listener %s cannot be handed over", nl.name)
		}
		f, err := fl.File()
		if err != nil {
			r.Close()
			return fmt.Errorf("strata: upgrade: listener %s: %w", nl.name, err)
		}
		spec = append(spec, nl.name+":"+strconv.Itoa(firstExtraFD+len(files)))
		files = append(files, f)
	}
	cmd := exec.Command(u.exe, os.Args[1:]...)
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = os.Stdout, os.Stderr, files
	cmd.Env = append(os.Environ(), upgradeEnv+"="+strings.Join(spec, ","))
	if err := cmd.Start(); err != nil {
		r.Close()
		return fmt.Errorf("strata: upgrade: start %s: %w", u.exe, err)
	}
	a.log.Info("upgrade: new binary started", "path", u.exe, "pid", cmd.Process.Pid)
	answer := make(chan error, 1) // buffered: the reader never waits for the signal loop
	u.child, u.answer = cmd, answer
	go func() {
		defer r.Close()
		_ = r.SetReadDeadline(time.Now().Add(upgradeReady))
		line, err := bufio.NewReader(r).ReadString('\n')
		if line == "go\n" {
			answer <- nil
			return
		}
		if err == nil {
			err = fmt.Errorf("unexpected %q", line)
		}
		answer <- fmt.Errorf("strata: upgrade: the new process did not take over: %w", err)
	}()
	return nil
}

// upgradeFailed forgets a failed upgrade: the new process is stopped
// (if it still runs) and reaped in the background.
func (a *app) upgradeFailed(err error) {
	a.log.Error("upgrade failed, this process serves on", "err", err)
	cmd := a.upgrade.child
	a.upgrade.child = nil
	_ = cmd.Process.Kill()
	go func() { _ = cmd.Wait() }()
}

// handOver gives the service to the new process of an upgrade and starts
// draining; shutdown follows.
func (a *app) handOver() {
	pid := a.upgrade.child.Process.Pid
	if err := sdNotify(fmt.Sprintf("MAINPID=%d", pid)); err != nil {
		a.log.Warn("upgrade: systemd notify", "err", err)
	}
	a.log.Info("upgrade: handing over to the new process", "pid", pid)
	a.admin.SetReady(false)
	a.draining.Store(true)
	time.Sleep(upgradeDrain)
}

// closeInherited closes the sockets handed over that no listener took
// (a listener the new config no longer has).
func (u *upgradeState) closeInherited() {
	for name, ln := range u.inherited {
		ln.Close()
		delete(u.inherited, name)
	}
}

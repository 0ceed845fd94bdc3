package main

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// sdNotify sends state (newline-separated VAR=VALUE pairs, e.g.
// "READY=1") to the service manager over the datagram socket named in
// NOTIFY_SOCKET, as sd_notify(3) does: a path, or "@name" for a socket in
// the abstract namespace. Without NOTIFY_SOCKET (not under systemd, or a
// unit that is not Type=notify) it does nothing. The variable is kept, so
// that the new process of a binary upgrade can notify too.
func sdNotify(state string) error {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil
	}
	if name[0] == '@' {
		name = "\x00" + name[1:]
	} else if name[0] != '/' {
		return fmt.Errorf("strata: NOTIFY_SOCKET %q: want an absolute path or @name", name)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("strata: sd_notify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("strata: sd_notify: %w", err)
	}
	return nil
}

// reloadingState is what a Type=notify-reload unit wants at the start of
// a reload (RELOADING=1 with the monotonic time); older systemd ignores it.
func reloadingState() string {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1000)
}

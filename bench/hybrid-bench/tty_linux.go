package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal says whether f is a terminal (a TCGETS ioctl succeeds; a
// character device such as /dev/null fails it).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

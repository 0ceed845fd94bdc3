//go:build !linux

package main

import "os"

// isTerminal is false off Linux: no progress line.
func isTerminal(*os.File) bool { return false }

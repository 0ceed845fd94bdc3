//go:build !linux

package main

// cgroupMemoryLimit: cgroups are Linux's; elsewhere there is no limit.
func cgroupMemoryLimit() int64 { return 0 }

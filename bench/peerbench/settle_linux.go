package main

import (
	"syscall"
	"time"
)

// settle writes back every dirty page on the machine (sync(2)) and
// returns how long that took. measure calls it between a system's
// warm-up and its run, so that no system pays during its run for the
// writeback of another's run or of its own warm-up: every system stays
// up for the whole bench, and the peers' caches are page-cache files
// (nginx's cache directory, Traffic Server's and Varnish's storage
// files; strata's disk tier writes with O_DIRECT, the access-log rows
// write their logs). Without it the system measured first in a scenario
// took the writeback of the previous scenario's last ones.
func settle() time.Duration {
	start := time.Now()
	syscall.Sync()
	return time.Since(start)
}

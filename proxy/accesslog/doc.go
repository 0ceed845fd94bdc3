// Package accesslog writes strata's access log: one line per request, in
// the NCSA combined format (what goaccess, awstats and log shippers read)
// or as JSON with the cache's view of the request (cache status, tier,
// origin status and time).
//
// Writing never blocks a request. Log.Write formats the line on the
// caller's goroutine, straight into one of several shard buffers, chosen
// by the request's connection, under that shard's mutex and with a number
// from one sequence: requests on different connections do not wait for
// each other (one buffer behind one mutex cost a 1 KiB hit a contended
// Unlock at every request; the sequence's one atomic add, about 10 ns on
// two cores, is cheaper than a clock read to order lines by). One writer goroutine, owned by
// the Log, takes every shard's lines at once and writes them in the order
// of their numbers, so lines are in the order their Writes took them, as
// with a single buffer. It takes them when a quarter of the buffer space
// is in use (at most 64 KiB), every 100 ms, and before a reopen or close:
// one write(2) for many lines, and no wake-up of the writer per line.
// Woken by the lines, it writes up to the last 64 KiB boundary of the
// file they reach (whole page-cache folios cost the kernel less) and
// keeps the rest for its next write; every 100 ms, and before a reopen
// or close, it writes everything, so no line waits longer. The
// buffers hold Options.BufferLines lines of about 256 bytes in all, in
// chunks any shard may use. When they are full, because the disk cannot
// keep up, lines are dropped and counted in
// strata_access_log_dropped_lines_total; lines written are counted in
// strata_access_log_lines_total, failed writes (the lines in them are
// lost) in strata_access_log_write_errors_total.
//
// A goroutine beside the writer keeps a coarse clock (the second, set as
// each second starts) that stamps lines written without a time: the combined format shows
// only the second, so its callers need not read the clock per request
// (Log.Timed).
//
// Reopen (on SIGUSR1, logrotate's convention) waits for the writer to
// write every line buffered, open Path anew (creating it) and
// close the old file, so a file moved aside keeps every line written before
// Reopen and the new file gets every line written after it. If the new
// file cannot be opened the old one is kept and the error logged.
//
// Close stops the writer after it has written what is buffered. A Log is
// safe for concurrent use; Write after Close drops the line.
package accesslog

// Package accesslog writes strata's access log: one line per request, in
// the NCSA combined format (what goaccess, awstats and log shippers read)
// or as JSON with the cache's view of the request (cache status, tier,
// origin status and time).
//
// Writing never blocks a request. Log.Write formats the line on the
// caller's goroutine (on its stack) and appends it to a batch buffer under
// a mutex, in the order Writes take it. A batch that reaches its size (32
// KiB by default) goes to one writer goroutine, owned by the Log, through a
// bounded queue (Options.BufferLines lines of about 256 bytes in all); the
// writer also takes whatever is buffered every 100 ms. Handing lines over
// a batch at a time spares each request the queue operations and the
// writer's wake-up per line: 1 KiB hits lost 13% of their req/s to them.
// When the queue is full, because the disk cannot keep up, the batch's
// lines are dropped and counted in strata_access_log_dropped_lines_total;
// lines written are counted in strata_access_log_lines_total, failed
// writes (the lines in them are lost) in
// strata_access_log_write_errors_total.
//
// A goroutine beside the writer keeps a coarse clock (the second, every 10 ms)
// that stamps lines written without a time: the combined format shows
// only the second, so its callers need not read the clock per request
// (Log.Timed).
//
// Reopen (on SIGUSR1, logrotate's convention) waits for the writer to
// write every line buffered or queued, open Path anew (creating it) and
// close the old file, so a file moved aside keeps every line written before
// Reopen and the new file gets every line written after it. If the new
// file cannot be opened the old one is kept and the error logged.
//
// Close stops the writer after it has written what is queued. A Log is
// safe for concurrent use; Write after Close drops the line.
package accesslog

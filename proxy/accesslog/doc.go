// Package accesslog writes strata's access log: one line per request, in
// the NCSA combined format (what goaccess, awstats and log shippers read)
// or as JSON with the cache's view of the request (cache status, tier,
// origin status and time).
//
// Writing never blocks a request. Log.Write formats the line into a
// buffer from a bounded free list (no allocation once it holds as many
// buffers as the queue's usual depth) on the caller's goroutine and offers it to a bounded
// queue (Options.BufferLines); one writer goroutine, owned by the Log,
// drains the queue into a 64 KiB buffered writer flushed every 100 ms
// and whenever it fills. When the queue is full, because the disk cannot
// keep up, the line is dropped and counted in
// strata_access_log_dropped_lines_total; lines written are counted in
// strata_access_log_lines_total, failed writes (the lines in them are
// lost) in strata_access_log_write_errors_total.
//
// Reopen (on SIGUSR1, logrotate's convention) queues a marker behind the
// queued lines; reaching it, the writer flushes, opens Path anew
// (creating it) and closes the old file, so a file moved aside keeps
// every line written before Reopen and the new file gets every line
// written after it. If the new file cannot be opened the old one is
// kept and the error logged.
//
// Close stops the writer after it has written what is queued. A Log is
// safe for concurrent use; Write after Close drops the line.
package accesslog

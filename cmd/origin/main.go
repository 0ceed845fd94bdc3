// Command origin is the sample origin of `make demo`, the e2e tests and the
// benchmarks: a fasthttp server of generated, deterministic objects whose
// size is in the path and whose headers and behaviour are set by the query.
//
//	origin [-listen 127.0.0.1:8081] [-max-paths 10000]
//
// Once bound it prints one line to stderr, "origin listening on
// http://ADDR" (port 0 picks a free port; tests read ADDR from that line).
// SIGTERM or SIGINT shut it down within 5 s.
//
// Objects: GET or HEAD /obj/<size>[/<name>...], size in ParseSize units
// (1k, 1KiB, 256k, 1MiB, 4GiB; up to 1 TiB). Bodies are generated while
// they are written, never held whole: a 4 GiB object costs a 64 KiB
// buffer. Content is a pure function of path, version and variant (see
// content.go; e2e has the same function for checking bytes). Ranges
// (single → 206 with Content-Range, several → multipart/byteranges, none
// satisfiable → 416, malformed → ignored, If-Range honoured), If-None-Match
// (weak comparison) and If-Modified-Since (→ 304) and HEAD work on every
// object whose status is 200.
//
// Query parameters (unknown ones are ignored, so ?n=42 makes a distinct URL;
// a malformed value is a 400):
//
//	max-age=N s-maxage=N            Cache-Control directives
//	no-store no-cache private public must-revalidate proxy-revalidate immutable
//	swr=N sie=N                     stale-while-revalidate=N, stale-if-error=N
//	expires=N                       Expires: now + N seconds (N may be negative)
//	etag=1 | etag=w                 strong or weak ETag from the content identity
//	lm=1                            Last-Modified: 2024-01-01 + version hours
//	vary=H1,H2                      Vary header; content depends on those request headers
//	cookie=1                        Set-Cookie
//	tag=a,b                         Surrogate-Key: a b
//	version=N                       new content, ETag and Last-Modified
//	status=N                        response status 200..599 (body still generated; 204 has none)
//	ctype=T                         Content-Type (default application/octet-stream)
//	hdr=Name:Value                  any extra header (repeatable, up to 16); e.g.
//	                                hdr=CDN-Cache-Control:max-age=600 (RFC 9213)
//	hint=LINK                       a 103 Early Hints with Link: LINK before the delay
//	                                (repeatable, up to 16; not in the final response)
//	delay=DURATION                  sleep before the headers (Go duration, up to 5m)
//	rate=BYTES_PER_SEC              pace the body (e.g. 64KiB); written raw, Connection: close
//	truncate=N                      promise the full length, close after N body bytes
//	chunked=1                       no Content-Length: chunked transfer coding
//
// Test hooks (not counted in the stats):
//
//	GET  /_stats         JSON {requests, bytes, not_modified, partial, inflight,
//	                     max_inflight, paths: {"/obj/1k?max-age=60": 1}, paths_dropped}
//	POST /_stats/reset   zero the counters
//	POST /_control?fail=STATUS|close|0&epoch=N
//	                     fail: every /obj request answers STATUS (empty body) or is
//	                     closed unanswered; 0 restores. epoch: added to every
//	                     object's version (the origin "changed" every object).
//	GET  /_control       the switches, as JSON
//	GET  /healthz        ok
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to listen on (port 0: any free port)")
	maxPaths := flag.Int("max-paths", 10000, "distinct request URIs counted one by one in /_stats")
	flag.Parse()
	if err := run(*listen, *maxPaths); err != nil {
		fmt.Fprintln(os.Stderr, "origin:", err)
		os.Exit(1)
	}
}

func run(listen string, maxPaths int) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	o := &origin{stats: newStats(maxPaths)}
	srv := &fasthttp.Server{
		Handler:              o.handle,
		Name:                 "strata-origin",
		ReadTimeout:          60 * time.Second,
		IdleTimeout:          60 * time.Second,
		NoDefaultContentType: true,
		CloseOnShutdown:      true,
	}
	fmt.Fprintf(os.Stderr, "origin listening on http://%s\n", ln.Addr())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-sigs:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.ShutdownWithContext(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return <-served
}

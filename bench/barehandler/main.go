// Command barehandler is bench/peerbench's reference "system": the Go
// ceiling that strata's figures are read against, not a competitor.
//
// With -mode serve it answers GET /obj/<size> from memory, as a cache hit
// would at best: one body per size, built on first use and lent to fasthttp
// with SetBodyRaw (never copied), with the headers a cached response
// carries; no cache, no origin, no Range. With -mode proxy it passes every
// request to -origin with a plain fasthttp.HostClient and answers with the
// origin's response (the "bare fasthttp proxy" a miss is compared with); it
// caches nothing.
//
// It listens on -listen (127.0.0.1 only) and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("barehandler", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on (loopback)")
	mode := fs.String("mode", "serve", "serve: bodies from memory | proxy: every request to -origin")
	origin := fs.String("origin", "", "origin base URL, http://HOST:PORT (mode proxy)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h, err := handler(*mode, *origin)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp4", *listen)
	if err != nil {
		return fmt.Errorf("barehandler: %w", err)
	}
	srv := &fasthttp.Server{Handler: h, Name: "barehandler", ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(os.Stderr, "barehandler %s listening on http://%s\n", *mode, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err = <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.ShutdownWithContext(sctx)
	return errors.Join(err, <-done)
}

func handler(mode, origin string) (fasthttp.RequestHandler, error) {
	switch mode {
	case "serve":
		return newBodies(maxBody).serve, nil
	case "proxy":
		u, err := url.Parse(origin)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("barehandler: -origin %q: want http://HOST:PORT", origin)
		}
		return newProxy(u.Host).serve, nil
	}
	return nil, fmt.Errorf("barehandler: -mode %q: want serve or proxy", mode)
}

package e2e

import (
	"context"
	"net"
	"testing"
	"time"

	"strata/hybrid"
	"strata/proxy"
)

// startInProcess serves a proxy.Server over a hybrid.Cache, both built in
// this test process, on 127.0.0.1:0 and returns its base URL. Cleanup shuts
// the listener down, then closes the proxy and the cache, failing the test
// if either reports an error.
func startInProcess(t *testing.T, co hybrid.Options, po proxy.Options) string {
	t.Helper()
	cache, err := hybrid.Open(co)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(cache, po)
	if err != nil {
		_ = cache.Close(context.Background())
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.ShutdownWithContext(ctx)
		<-served
		if err := srv.Close(ctx); err != nil {
			t.Errorf("proxy Close: %v", err)
		}
		if err := cache.Close(ctx); err != nil {
			t.Errorf("cache Close: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

package e2e

// TestPurgeSurvivesRestart drives proxy.Server over a hybrid.Cache on a
// MemDevice: purges by tag (objects the tag index knows are removed from
// the store, on disk by tombstones) and by prefix (objects hidden by the
// persisted purge table) still hold after the cache is closed and
// reopened from the device, and the two mechanisms each hold alone.

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"strata/blockdev"
	"strata/hybrid"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
	"strata/proxy"
)

type purgeLife struct {
	t      *testing.T
	cache  *hybrid.Cache
	srv    *proxy.Server
	hs, as *fasthttp.Server
	base   string // proxy
	admin  string
	done   chan struct{}
}

func startPurgeLife(t *testing.T, dev blockdev.Device, origin, state string) *purgeLife {
	t.Helper()
	cache, err := hybrid.Open(hybrid.Options{
		Memory:      memory.Options{Capacity: 4 << 20, Shards: 1},
		Disk:        disk.Options{RegionSize: 1 << 20, BufferSize: 256 << 10},
		Device:      dev,
		WritePolicy: hybrid.WriteOnInsertion,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(cache, proxy.Options{
		Origins:    []proxy.OriginOptions{{URL: origin}},
		PurgeToken: "tok",
		Purge:      proxy.PurgeOptions{StateFile: state},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &purgeLife{t: t, cache: cache, srv: srv, hs: srv.HTTPServer(),
		as: &fasthttp.Server{Handler: proxy.NewAdmin(srv, nil).Handler}, done: make(chan struct{}, 2)}
	l.base = l.serve(l.hs)
	l.admin = l.serve(l.as)
	return l
}

func (l *purgeLife) serve(s *fasthttp.Server) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.t.Fatal(err)
	}
	go func() { _ = s.Serve(ln); l.done <- struct{}{} }()
	return "http://" + ln.Addr().String()
}

// stop shuts the listeners, the proxy and the cache down, in that order.
func (l *purgeLife) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.hs.ShutdownWithContext(ctx)
	_ = l.as.ShutdownWithContext(ctx)
	<-l.done
	<-l.done
	if err := l.srv.Close(ctx); err != nil {
		l.t.Error(err)
	}
	if err := l.cache.Close(ctx); err != nil {
		l.t.Error(err)
	}
}

// status GETs path (Host example.com) and returns its Cache-Status.
func (l *purgeLife) status(path string) string {
	l.t.Helper()
	req, _ := http.NewRequest("GET", l.base+path, nil)
	req.Host = "example.com" // the key is the same whatever port this life listens on
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Header.Get("Cache-Status")
}

func (l *purgeLife) purge(query string) {
	l.t.Helper()
	req, _ := http.NewRequest("POST", l.admin+"/purge?"+query, nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		l.t.Fatalf("purge %s: %d %s", query, resp.StatusCode, b)
	}
}

func TestPurgeSurvivesRestart(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Cache-Control", "max-age=3600")
		if strings.HasPrefix(r.URL.Path, "/red/") {
			w.Header().Set("Surrogate-Key", "red")
		}
		_, _ = io.WriteString(w, "body of "+r.URL.Path)
	}))
	defer origin.Close()
	dev, err := blockdev.NewMem(32<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "purge.state")
	paths := []string{"/red/1", "/red/2", "/img/a", "/plain"}

	l := startPurgeLife(t, dev, origin.URL, state)
	for _, p := range paths {
		l.status(p)
		waitUntil(t, func() bool { return strings.Contains(l.status(p), "hit") })
	}
	l.purge("tag=red&prefix=http://example.com/img/")
	l.stop()

	for _, tc := range []struct {
		name      string
		keepState bool
		hit       map[string]bool
	}{
		// Tombstones remove /red/*; the state file hides /img/*.
		{"tombstones and state", true, map[string]bool{"/red/1": false, "/red/2": false, "/img/a": false, "/plain": true}},
		// Without the state file only the removals hold.
		{"tombstones only", false, map[string]bool{"/red/1": false, "/red/2": false, "/img/a": true, "/plain": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := filepath.Join(t.TempDir(), "purge.state")
			if tc.keepState {
				b, err := os.ReadFile(state)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(st, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l := startPurgeLife(t, dev.CrashClone(), origin.URL, st)
			defer l.stop()
			for _, p := range paths {
				got := l.status(p)
				if want := tc.hit[p]; strings.Contains(got, "hit") != want {
					t.Errorf("%s after restart: Cache-Status %q, want hit=%v", p, got, want)
				}
				if tc.hit[p] && !strings.Contains(got, "detail=disk") {
					t.Errorf("%s after restart: %q, want a disk hit", p, got)
				}
			}
		})
	}
}

// waitUntil polls cond for up to 5 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

package e2e

// Helpers of the strata e2e tests: start the real binary (built from
// cmd/proxy, which go names "proxy" and `make build` renames "strata") on
// loopback ports chosen by the kernel, with its cache in a test directory.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// strataBin returns the path of the strata binary.
func strataBin(t testing.TB) string {
	t.Helper()
	dir := filepath.Dir(binPath(t, "origin"))
	for _, name := range []string{"strata", "proxy"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("no strata (or proxy) binary in %s", dir)
	return ""
}

// strataOpts tune startStrata.
type strataOpts struct {
	Origin string   // -origin; "" leaves the config's
	Config string   // YAML written to a file passed as -config; "" uses the embedded default
	Dir    string   // working directory, holding the cache file; default t.TempDir()
	Mem    string   // -mem; default 16MiB
	Args   []string // more flags (override the defaults above when repeated)
	Env    []string // added to the environment
}

// strata is a running strata process.
type strata struct {
	*process
	URL   string // http://ADDR of the client listener
	Admin string // http://ADDR of the admin listener
	Dir   string
}

// startStrata starts strata on 127.0.0.1 port 0 (client and admin) with a
// 128 MiB cache file in o.Dir and waits for both listeners.
func startStrata(t testing.TB, o strataOpts) *strata {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Mem == "" {
		o.Mem = "16MiB"
	}
	args := []string{"-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
		"-cache-path", filepath.Join(o.Dir, "strata.cache"), "-cache-size", "128MiB", "-mem", o.Mem}
	if o.Origin != "" {
		args = append(args, "-origin", o.Origin)
	}
	if o.Config != "" {
		path := filepath.Join(o.Dir, "strata.yaml")
		if err := os.WriteFile(path, []byte(o.Config), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-config", path)
	}
	args = append(args, o.Args...)
	p := startProcessOpts(t, procOpts{Wait: []string{"strata", "admin"}, Dir: o.Dir, Env: o.Env}, strataBin(t), args...)
	return &strata{process: p, URL: p.URL("strata"), Admin: p.URL("admin"), Dir: o.Dir}
}

// get GETs url with the Go client and returns the response with its body
// read; headers are passed as "Name: value".
func get(t testing.TB, url string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if strings.EqualFold(k, "Host") {
			req.Host = strings.TrimSpace(v)
			continue
		}
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp, body
}

// cacheStatus is a response's Cache-Status.
func cacheStatus(h http.Header) string { return h.Get("Cache-Status") }

// wantStatus fails unless Cache-Status contains every part.
func wantStatus(t testing.TB, what string, h http.Header, parts ...string) {
	t.Helper()
	cs := cacheStatus(h)
	for _, p := range parts {
		if !strings.Contains(cs, p) {
			t.Errorf("%s: Cache-Status %q, want it to contain %q", what, cs, p)
		}
	}
}

// isMiss says whether Cache-Status reports a forward for a miss.
func isMiss(h http.Header) bool {
	cs := cacheStatus(h)
	return strings.Contains(cs, "fwd=miss") || strings.Contains(cs, "fwd=uri-miss")
}

// originCount is how many requests the origin saw for pathQuery.
func originCount(t testing.TB, o *process, pathQuery string) int {
	t.Helper()
	return int(getOriginStats(t, o).Paths[pathQuery])
}

// evictToDisk fetches n objects of 256 KiB through s, so that a small
// memory tier evicts older entries to the disk tier.
func evictToDisk(t testing.TB, s *strata, n int) {
	t.Helper()
	for i := range n {
		resp, _ := get(t, fmt.Sprintf("%s/obj/256k/filler?max-age=600&n=%d", s.URL, i))
		if resp.StatusCode != 200 {
			t.Fatalf("filler %d: %s", i, resp.Status)
		}
	}
}

// awaitDiskHit GETs url until a response is a disk hit (the eviction's
// write is asynchronous; a pending write already answers as disk), for at
// most 5 s, and returns that response and body.
func awaitDiskHit(t testing.TB, url string) (*http.Response, []byte) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, body := get(t, url)
		if strings.Contains(cacheStatus(resp.Header), "detail=disk") || time.Now().After(deadline) {
			return resp, body
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback address nothing listens on (bound, then
// closed: a connect to it is refused).
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// metricSample reads one sample from the admin listener's /metrics. name
// may carry labels (`strata_disk_dropped_total{reason="queue"}`, matched
// exactly); without them it also matches the first labelled series of
// the metric. ok is false when there is none.
func metricSample(t testing.TB, admin, name string) (float64, bool) {
	t.Helper()
	resp, body := get(t, admin+"/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	re := `(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`
	if !strings.Contains(name, "{") {
		re = `(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)$`
	}
	m := regexp.MustCompile(re).FindSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %q", name, m[1])
	}
	return v, true
}

// metric is metricSample for a metric that must be there.
func metric(t testing.TB, admin, name string) float64 {
	t.Helper()
	v, ok := metricSample(t, admin, name)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return v
}

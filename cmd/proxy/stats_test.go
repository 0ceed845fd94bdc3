package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestStatsOnce: -once scrapes twice an interval apart and prints one
// view with the rates between; a node that cannot be read is exit 1, bad
// flags exit 2.
func TestStatsOnce(t *testing.T) {
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		n := scrapes.Add(1)
		// 50 hits more on each scrape.
		w.Write([]byte("strata_requests_total{cache_status=\"hit\"} " + strconv.FormatInt(50*n, 10) + "\n"))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		out    string
	}{
		{"once", []string{"stats", "-once", "-interval", "100ms", "-admin", strings.TrimPrefix(srv.URL, "http://")}, exitOK, "hit ratio    requests 100.0%"},
		{"admin as a URL", []string{"stats", "-once", "-interval", "100ms", "-admin", srv.URL}, exitOK, "strata " + srv.URL + "  "},
		{"not a node", []string{"stats", "-once", "-interval", "10ms", "-admin", srv.URL + "/nothing"}, exitRuntime, ""},
		{"bad flag", []string{"stats", "-bogus"}, exitUsage, ""},
		{"bad interval", []string{"stats", "-interval", "0s"}, exitUsage, ""},
		{"stats not first", []string{"-listen", "127.0.0.1:0", "stats"}, exitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			if got := run(tc.args, &stdout, &stderr); got != tc.status {
				t.Fatalf("exit %d, want %d; stderr %s", got, tc.status, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.out) {
				t.Errorf("no %q in\n%s", tc.out, stdout.String())
			}
			if tc.status == exitOK && strings.Contains(stdout.String(), "\x1b[") {
				t.Errorf("-once printed terminal escapes:\n%q", stdout.String())
			}
		})
	}
}

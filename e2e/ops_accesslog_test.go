package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startLogged starts strata with a 4 MiB memory tier and the access log
// at dir/access.log in format.
func startLogged(t *testing.T, origin, format string) (*strata, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	s := startStrata(t, strataOpts{Origin: origin, Dir: dir, Mem: "4MiB",
		Config: fmt.Sprintf("access_log: {path: %q, format: %s}\n", path, format)})
	return s, path
}

// logLines reads path until it has n lines (the writer flushes every
// 100 ms), for at most 5 s.
func logLines(t *testing.T, path string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var lines []string
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			f.Close()
		}
		if len(lines) >= n || time.Now().After(deadline) {
			if len(lines) != n {
				t.Fatalf("%s: %d lines, want %d:\n%s", path, len(lines), n, strings.Join(lines, "\n"))
			}
			return lines
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAccessLogCombined: each request is one NCSA combined line, byte
// for byte but for the time, which is the request's.
func TestAccessLogCombined(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s, path := startLogged(t, o.URL("origin"), "combined")
	// Lines carry the coarse clock's second, which may lag a few ms: a
	// request just after a second turns may show the second before.
	before := time.Now().Truncate(time.Second).Add(-time.Second)
	get(t, s.URL+"/obj/1k/c?max-age=600")
	get(t, s.URL+"/obj/1k/c?max-age=600", "Referer: http://ref.example/p?q=1", `User-Agent: agent "7" \ x`)
	curl(t, "-sI", s.URL+"/obj/1k/c?max-age=600", "-A", "")
	get(t, s.URL+"/obj/1k/other?max-age=600&status=404")
	lines := logLines(t, path, 4)
	timeRE := regexp.MustCompile(`\[([^\]]+)\]`)
	want := []string{
		`127.0.0.1 - - [T] "GET /obj/1k/c?max-age=600 HTTP/1.1" 200 1024 "-" "Go-http-client/1.1"`,
		`127.0.0.1 - - [T] "GET /obj/1k/c?max-age=600 HTTP/1.1" 200 1024 "http://ref.example/p?q=1" "agent \"7\" \\ x"`,
		`127.0.0.1 - - [T] "HEAD /obj/1k/c?max-age=600 HTTP/1.1" 200 - "-" "-"`,
		`127.0.0.1 - - [T] "GET /obj/1k/other?max-age=600&status=404 HTTP/1.1" 404 `,
	}
	for i, l := range lines {
		m := timeRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %d has no [time]: %s", i, l)
		}
		at, err := time.Parse("02/Jan/2006:15:04:05 -0700", m[1])
		if err != nil || at.Before(before) || at.After(time.Now().Add(time.Second)) {
			t.Errorf("line %d: time %q (%v), want now", i, m[1], err)
		}
		got := strings.Replace(l, m[0], "[T]", 1)
		if i == 3 { // the 404's body is the origin's business
			got = got[:min(len(got), len(want[i]))]
		}
		if got != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
}

// TestAccessLogJSON: the JSON lines have every field with its type, and
// tell a miss (with the origin's status and time) from a memory hit and
// a disk hit.
func TestAccessLogJSON(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s, path := startLogged(t, o.URL("origin"), "json")
	const small, large = "/obj/1k/j?max-age=600", "/obj/200k/j?max-age=600"
	get(t, s.URL+small) // miss
	get(t, s.URL+small) // memory hit
	get(t, s.URL+large) // miss, then evicted to disk
	lines := logLines(t, path, 3)
	evictToDisk(t, s, 40)
	resp, _ := awaitDiskHit(t, s.URL+large)
	wantStatus(t, "after eviction", resp.Header, "hit", "detail=disk")
	all := logLines(t, path, len(lines)+40+countDiskTries(t, path, len(lines)+40))
	lines = append(lines, all[len(all)-1])

	types := map[string]string{"time": "string", "remote": "string", "method": "string", "uri": "string",
		"proto": "string", "status": "number", "bytes": "number", "duration_ms": "number",
		"cache_status": "string", "cache_detail": "string", "tier": "string", "referer": "string", "user_agent": "string"}
	want := []struct {
		uri, cacheStatus, tier string
		bytes                  float64
		origin                 bool
	}{
		{small, "miss", "none", 1 << 10, true},
		{small, "hit", "memory", 1 << 10, false},
		{large, "miss", "none", 200 << 10, true},
		{large, "hit", "disk", 200 << 10, false},
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		for k, typ := range types {
			if got := jsonType(m[k]); got != typ {
				t.Errorf("line %d: %s is %s, want %s: %s", i, k, got, typ, l)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"])); err != nil {
			t.Errorf("line %d: time: %v", i, err)
		}
		w := want[i]
		if m["cache_status"] != w.cacheStatus || m["tier"] != w.tier || m["uri"] != w.uri || m["status"] != 200.0 || m["bytes"] != w.bytes {
			t.Errorf("line %d: want cache_status %s tier %s for %s, 200, %v bytes: %s", i, w.cacheStatus, w.tier, w.uri, w.bytes, l)
		}
		_, hasStatus := m["origin_status"]
		if hasStatus != w.origin {
			t.Errorf("line %d: origin fields present %v, want %v: %s", i, hasStatus, w.origin, l)
		}
		if w.origin && (m["origin_status"] != 200.0 || jsonType(m["origin_ms"]) != "number") {
			t.Errorf("line %d: origin_status 200 and origin_ms a number, got %s", i, l)
		}
	}
}

// countDiskTries is the number of lines after the first n (awaitDiskHit's
// GETs of the evicted object, at least one).
func countDiskTries(t *testing.T, path string, n int) int {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // three flush periods
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n") - n
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case nil:
		return "missing"
	}
	return fmt.Sprintf("%T", v)
}

// TestAccessLogReopen: logrotate's way: the file is moved, SIGUSR1 makes
// strata open a new one; every request is in one of the two files, once,
// and those after the reopen in the new one.
func TestAccessLogReopen(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s, path := startLogged(t, o.URL("origin"), "combined")
	send := func(from, to int) {
		for i := from; i < to; i++ {
			get(t, fmt.Sprintf("%s/obj/1k/r%d?max-age=600", s.URL, i))
		}
	}
	send(0, 50)
	logLines(t, path, 50)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	send(50, 100) // into the moved file
	if err := syscall.Kill(s.PID, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(s.Output(), "accesslog: reopened") {
		if time.Now().After(deadline) {
			t.Fatal("no reopen logged after SIGUSR1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	send(100, 150)
	cur := logLines(t, path, 50)
	old := logLines(t, path+".1", 100)
	seen := map[string]int{}
	for _, l := range append(old, cur...) {
		seen[strings.Fields(l)[6]]++
	}
	for i := range 150 {
		if n := seen[fmt.Sprintf("/obj/1k/r%d?max-age=600", i)]; n != 1 {
			t.Errorf("request %d logged %d times", i, n)
		}
	}
	if !strings.Contains(cur[0], "/r100?") || !strings.Contains(old[99], "/r99?") {
		t.Errorf("new file starts %q, moved file ends %q", cur[0], old[99])
	}
	if d := metric(t, s.Admin, "strata_access_log_dropped_lines_total"); d != 0 {
		t.Errorf("%v lines dropped", d)
	}
}

// TestAccessLogDuration: a request the origin holds 300 ms is logged with
// the time it arrived and a duration_ms (and origin_ms) of at least that:
// the log must read its own clock, since the server reads none per
// request (LazyRequestTime).
func TestAccessLogDuration(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s, path := startLogged(t, o.URL("origin"), "json")
	sent := time.Now()
	get(t, s.URL+"/obj/1k/slow?max-age=600&delay=300ms")
	lines := logLines(t, path, 1)
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"]))
	if err != nil {
		t.Fatal(err)
	}
	if d := at.Sub(sent); d < -time.Second || d > 150*time.Millisecond {
		t.Errorf("time %v is %v after the request was sent, want its arrival", at, d)
	}
	if ms, _ := m["duration_ms"].(float64); ms < 300 {
		t.Errorf("duration_ms %v, want at least the origin's 300 ms: %s", ms, lines[0])
	}
	if ms, _ := m["origin_ms"].(float64); ms < 300 {
		t.Errorf("origin_ms %v, want at least 300: %s", ms, lines[0])
	}
}

// TestAccessLogConnections: requests on many keep-alive connections at
// once each make one whole line, and the lines of one connection are in
// the order of its requests.
func TestAccessLogConnections(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s, path := startLogged(t, o.URL("origin"), "combined")
	const conns, each = 8, 40
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{MaxConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for i := range each {
				resp, err := client.Get(fmt.Sprintf("%s/obj/1k/conn?max-age=600&c=%d&i=%d", s.URL, c, i))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	lineRE := regexp.MustCompile(`^127\.0\.0\.1 - - \[[^\]]+\] "GET /obj/1k/conn\?max-age=600&c=(\d+)&i=(\d+) HTTP/1\.1" 200 1024 "-" "Go-http-client/1\.1"$`)
	next := make([]int, conns)
	for _, l := range logLines(t, path, conns*each) {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q", l)
		}
		c, _ := strconv.Atoi(m[1])
		if i, _ := strconv.Atoi(m[2]); i != next[c] {
			t.Fatalf("connection %d: request %d logged after %d", c, i, next[c]-1)
		}
		next[c]++
	}
}

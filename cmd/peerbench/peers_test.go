package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTemplatesRender renders every peer's config from bench/ and checks
// that the budgets and addresses reached it.
func TestTemplatesRender(t *testing.T) {
	o := Options{Root: "../.."}
	o.EnsureDefaults()
	dir := t.TempDir()
	e, err := newSysEnv("x", dir, "../../bench", "http://127.0.0.1:4567", &o)
	if err != nil {
		t.Fatal(err)
	}
	e.CacheFile, e.User, e.MaxObjectBytes = "/c/ats.cache", "#-1", 123
	for tmpl, wants := range map[string][]string{
		"nginx.conf.tmpl":         {"worker_processes " + itoa(o.Cores), "max_size=2147483648", "server 127.0.0.1:4567", "listen " + e.Listen, "access_log off", "keepalive 128"},
		"varnish.vcl.tmpl":        {`.port = "4567"`, "> 123"},
		"ats/records.config.tmpl": {"ram_cache.size INT 67108864", "server_ports STRING " + itoa(e.Port) + ":ipv4:ip-in=127.0.0.1", "logging_enabled INT 0"},
		"ats/storage.config.tmpl": {"/c/ats.cache 2147483648"},
		"ats/remap.config.tmpl":   {"map http://" + e.Listen + "/ http://127.0.0.1:4567/"},
		"ats/runroot.yaml.tmpl":   {"sysconfdir: " + dir + "/etc"},
	} {
		dst := filepath.Join(dir, strings.ReplaceAll(tmpl, "/", "_"))
		if err := render(e, tmpl, dst); err != nil {
			t.Fatalf("%s: %v", tmpl, err)
		}
		b, _ := os.ReadFile(dst)
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", tmpl, w)
			}
		}
	}
	if err := render(e, "no-such.tmpl", filepath.Join(dir, "x")); err == nil {
		t.Error("missing template rendered")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestParseStat(t *testing.T) {
	st, err := parseStat([]byte("42 (nginx: worker (x)) S 7 42 42 0 -1 4194624 1 0 0 0 10 20 3 4 20 0 1 0 100 0 0"))
	if err != nil || st.ppid != 7 || st.ticks != 37 {
		t.Errorf("parseStat = %+v, %v; want ppid 7, ticks 37", st, err)
	}
	for _, bad := range []string{"", "42 (x", "42 (x) S abc", "42 (x) S 1 2 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestProcessTreeAccounting(t *testing.T) {
	self := os.Getpid()
	if cpuSeconds(self) < 0 || peakRSS(self) <= 0 {
		t.Errorf("self: cpu %v, rss %d", cpuSeconds(self), peakRSS(self))
	}
	if tree := processTree(self); len(tree) == 0 || tree[0] != self {
		t.Errorf("tree = %v", tree)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"strata/configs"
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
		"nginx.conf.tmpl":         {"worker_processes " + itoa(o.Cores), "max_size=4294967296", "server 127.0.0.1:4567", "listen " + e.Listen, "access_log off", "keepalive 128"},
		"varnish.vcl.tmpl":        {`.port = "4567"`, "> 123"},
		"ats/records.config.tmpl": {"ram_cache.size INT 268435456", "server_ports STRING " + itoa(e.Port) + ":ipv4:ip-in=127.0.0.1", "logging_enabled INT 0"},
		"ats/storage.config.tmpl": {"/c/ats.cache 4294967296"},
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
	if err != nil || st.ppid != 7 || st.ticks != 37 || st.self != 30 {
		t.Errorf("parseStat = %+v, %v; want ppid 7, ticks 37, self 30", st, err)
	}
	for _, bad := range []string{"", "42 (x", "42 (x) S abc", "42 (x) S 1 2 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestBareTakesPart(t *testing.T) {
	bare, proxy := systemByName("bare"), systemByName("bare-proxy")
	if !bare.Reference || !proxy.Reference || systemByName("strata").Reference {
		t.Fatal("bare and bare-proxy are references, strata is not")
	}
	for _, sc := range scenarios(256 << 20) {
		miss := sc.Mode == "unique"
		if proxy.takesPart(sc) != miss || bare.takesPart(sc) != (!miss && sc.Mode != "range") {
			t.Errorf("scenario %s: bare %v, bare-proxy %v", sc.ID, bare.takesPart(sc), proxy.takesPart(sc))
		}
		if !systemByName("nginx").takesPart(sc) {
			t.Errorf("nginx skips %s", sc.ID)
		}
	}
}

// loadStrataConfig loads and validates the strata.yaml rendered in dir.
func loadStrataConfig(t *testing.T, dir string) *configs.Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "strata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(b, "strata.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestStrataLogConfig: the strata-combined and strata-json rows run
// strata with its access log on, in their format, into their temp dir;
// the strata row runs it off. They take part in the 1 KiB hit scenarios
// only, as references.
func TestStrataLogConfig(t *testing.T) {
	for _, tc := range []struct{ system, format string }{{"strata", ""}, {"strata-combined", "combined"}, {"strata-json", "json"}} {
		o := Options{Root: "../..", Strata: os.Args[0]}
		o.EnsureDefaults()
		dir := t.TempDir()
		e, err := newSysEnv(tc.system, dir, "../../bench", "http://127.0.0.1:4567", &o)
		if err != nil {
			t.Fatal(err)
		}
		s := systemByName(tc.system)
		if _, _, err := s.prepare(e); err != nil {
			t.Fatal(err)
		}
		cfg := loadStrataConfig(t, dir)
		want := ""
		if tc.format != "" {
			want = filepath.Join(dir, "access.log")
		}
		if got := cfg.AccessLog.Path; got != want || (want != "" && cfg.AccessLog.Format != tc.format) {
			t.Errorf("%s: access log %q format %q, want %q format %q", tc.system, got, cfg.AccessLog.Format, want, tc.format)
		}
		if tc.format == "" {
			continue
		}
		if !s.Reference {
			t.Errorf("%s is not a reference", tc.system)
		}
		for _, sc := range scenarios(256 << 20) {
			if want := sc.ID == "1a" || sc.ID == "1b"; s.takesPart(sc) != want {
				t.Errorf("%s in scenario %s: %v", tc.system, sc.ID, !want)
			}
		}
	}
}

// TestStrataLogRowsDisk: the access log rows preallocate a small disk
// file, not the disk budget: every system starts before the first
// scenario and runs to the end, so a budget each would take two more
// -disk files (4 GiB each by default) from the temp dir, ahead of the
// peers started after them, for rows that only serve 1 KiB memory hits.
// The strata row keeps the budget; each config composes, as strata
// checks it before it starts.
func TestStrataLogRowsDisk(t *testing.T) {
	for _, name := range []string{"strata", "strata-combined", "strata-json"} {
		o := Options{Root: "../..", Strata: os.Args[0]}
		o.EnsureDefaults()
		dir := t.TempDir()
		e, err := newSysEnv(name, dir, "../../bench", "http://127.0.0.1:4567", &o)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := systemByName(name).prepare(e); err != nil {
			t.Fatal(err)
		}
		want := o.Disk
		if name != "strata" {
			want = logRowDisk
		}
		cfg := loadStrataConfig(t, dir)
		if got := cfg.Cache.Disk.Size.Bytes(); got != want {
			t.Errorf("%s: disk %d bytes, want %d", name, got, want)
		}
		if _, err := cfg.Compose(nil); err != nil { // the engine's own bounds (regions per flusher)
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestProcessTreeAccounting(t *testing.T) {
	self := os.Getpid()
	if cpuSeconds(self) < 0 || peakRSS(self) <= 0 {
		t.Errorf("self: cpu %v, rss %d", cpuSeconds(self), peakRSS(self))
	}
	if c := selfCPUSeconds(); c < 0 || c > cpuSeconds(self)+0.01 {
		t.Errorf("selfCPUSeconds = %v; want 0..tree's %v", c, cpuSeconds(self))
	}
	if tree := processTree(self); len(tree) == 0 || tree[0] != self {
		t.Errorf("tree = %v", tree)
	}
}

// TestStrataConfig renders strata's config as prepareStrata does and loads
// it with strata's own loader: it must be valid and carry the peers'
// budgets, the cache file and a max object size that lets scenario 6's
// 1 GiB object be cached.
func TestStrataConfig(t *testing.T) {
	o := Options{Root: "../..", Strata: os.Args[0]}
	o.EnsureDefaults()
	dir := t.TempDir()
	e, err := newSysEnv("strata", dir, "../../bench", "http://127.0.0.1:4567", &o)
	if err != nil {
		t.Fatal(err)
	}
	argv, _, err := prepareStrata(e)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv[1:], " "); got != "-config "+filepath.Join(dir, "strata.yaml")+" -pprof" {
		t.Errorf("argv = %q", got)
	}
	cfg := loadStrataConfig(t, dir)
	c := cfg.Cache
	if c.Memory.Capacity.Bytes() != o.Mem || c.Disk.Size.Bytes() != o.Disk ||
		c.Disk.Path != filepath.Join(dir, "strata.cache") || c.MaxObjectSize.Bytes() < 1<<30 {
		t.Errorf("cache config %+v: want mem %d, disk %d in %s, max object >= 1GiB", c, o.Mem, o.Disk, dir)
	}
	if cfg.Listen != e.Listen || cfg.AdminListen != e.AdminListen || cfg.Origins[0].URL != "http://127.0.0.1:4567" {
		t.Errorf("listen %s admin %s origins %+v", cfg.Listen, cfg.AdminListen, cfg.Origins)
	}
}

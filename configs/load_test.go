package configs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestFiles: every YAML file in configs/ decodes, validates, and
// round-trips (marshal → load → equal).
func TestFiles(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least default, edge and shield: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			c, err := LoadFile(f)
			if err != nil {
				t.Fatalf("load:\n%v", err)
			}
			out, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Load(out, f+" (marshalled)")
			if err != nil {
				t.Fatalf("reload:\n%v\n%s", err, out)
			}
			if !reflect.DeepEqual(c, back) {
				t.Fatalf("round trip differs:\n%+v\n%+v", c, back)
			}
		})
	}
}

// TestDefaultIsDefaults: default.yaml spells out EnsureDefaults' values, so
// it and a config that states only what has no default are the same.
func TestDefaultIsDefaults(t *testing.T) {
	def, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	minimal, err := Load([]byte(`
origins:
  - {name: sample, url: "http://127.0.0.1:8081"}
cache:
  disk: {path: ./data/strata.cache, size: 1GiB}
`), "minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(def, minimal) {
		a, _ := def.Marshal()
		b, _ := minimal.Marshal()
		t.Fatalf("default.yaml:\n%s\nEnsureDefaults:\n%s", a, b)
	}
	if !bytesEqualFile(t, Default, DefaultName) {
		t.Fatal("Default is not default.yaml")
	}
}

func bytesEqualFile(t *testing.T, b []byte, name string) bool {
	f, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(f) == string(b)
}

const good = `listen: ":8080"
origins:
  - url: http://127.0.0.1:8081
`

// TestBadConfigs: every problem is reported, each with its line.
func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string // "line: substring" of each problem, in order; line "-": none
	}{
		{"unknown key", good + "cache:\n  memory:\n    capacty: 1GiB\n",
			[]string{`6: cache.memory.capacty: unknown key "capacty"`}},
		{"unknown top key", "lissten: :80\n" + good,
			[]string{`1: lissten: unknown key`}},
		{"wrong type", good + "cache:\n  disk:\n    flushers: many\n",
			[]string{`6: cache.disk.flushers: wrong type: got str "many", want an integer`}},
		{"list for a string", good + "log:\n  level: [a]\n",
			[]string{`5: log.level: wrong type`}},
		{"negative size", good + "cache:\n  memory:\n    capacity: -1GiB\n",
			[]string{`6: cache.memory.capacity: bad size: "-1GiB"`}},
		{"negative integer size", good + "limits:\n  max_request_body: -5\n",
			[]string{`5: limits.max_request_body: bad size`}},
		{"drive writes over 100", good + "cache:\n  disk:\n    admission:\n      drive_writes_per_day: 200\n",
			[]string{`7: cache.disk.admission.drive_writes_per_day: must be in (0, 100], or -1`}},
		{"drive writes negative, not -1", good + "cache:\n  disk:\n    admission:\n      drive_writes_per_day: -0.5\n",
			[]string{`7: cache.disk.admission.drive_writes_per_day: must be in`}},
		{"bad duration", good + "limits:\n  read_timeout: 30\n",
			[]string{`5: limits.read_timeout: bad duration "30"`}},
		{"negative duration", good + "limits:\n  read_timeout: -1s\n",
			[]string{`5: limits.read_timeout: must be positive`}},
		{"negative fill timeout", good + "limits:\n  fill_timeout: -5m\n",
			[]string{`5: limits.fill_timeout: must be positive`}},
		{"bad URL scheme", "origins:\n  - url: ftp://x\n",
			[]string{`2: origins[0].url: bad URL "ftp://x": scheme`}},
		{"URL with path", "origins:\n  - url: http://x/bucket\n",
			[]string{`2: origins[0].url: bad URL "http://x/bucket": an origin URL has no path`}},
		{"bad enum", good + "cache:\n  memory:\n    policy: arc\n",
			[]string{`6: cache.memory.policy: bad value "arc": want one of s3fifo, lru, fifo`}},
		{"duplicate default origin", `origins:
  - {name: a, url: "http://a:1", default: true}
  - name: b
    url: http://b:1
    default: true
`, []string{`5: origins[1].default: only one origin may be the default (origins[0] is)`}},
		{"duplicate name and host", `origins:
  - {name: a, url: "http://a:1", default: true, hosts: [x.com]}
  - {name: a, url: "http://b:1", hosts: [X.com]}
`, []string{`3: origins[1].name: duplicate`, `3: origins[1].hosts[0]: host "X.com" is also routed to origins[0]`}},
		{"unreachable origin", "origins:\n  - {url: \"http://a:1\", default: true}\n  - url: http://b:1\n",
			[]string{`3: origins[1].hosts: an origin that is not the default needs hosts`}},
		{"origin header limit", "origins:\n  - url: http://a:1\n    max_header_bytes: 1KiB\n",
			[]string{`3: origins[0].max_header_bytes: must be between 4096 and 1048576`}},
		{"ca_file on http", "origins:\n  - url: http://a:1\n    ca_file: /x.pem\n",
			[]string{`3: origins[0].ca_file: only for an https origin`}},
		{"tls half set", good + "tls:\n  cert_file: c.pem\n",
			[]string{`4: tls.listen: required`}},
		{"two problems at once", good + `cache:
  memory:
    capacity: 1KiB
  disk:
    region_size: 3MiB
    bogus: 1
    runtime: threads
log:
  level: loud
`, []string{
			`6: cache.memory.capacity: must be between 1048576`,
			`9: cache.disk.bogus: unknown key`,
			`10: cache.disk.runtime: bad value "threads"`,
			`12: log.level: bad value "loud"`,
		}},
		{"region not aligned", good + "cache:\n  disk:\n    region_size: 1000000\n",
			[]string{`6: cache.disk.region_size: must be a multiple of 4KiB`}},
		{"disk fault handling", good + "cache:\n  disk:\n    read_timeout: 0.5ms\n    error_limit: -2\n    error_window: 48h\n    probe_interval: -1s\n",
			[]string{`6: cache.disk.read_timeout: must be between 1ms and 1m0s, got 500µs`,
				`7: cache.disk.error_limit: must be between 1 and 1048576, got -2`,
				`8: cache.disk.error_window: must be between 1ms and 24h0m0s, got 48h0m0s`,
				`9: cache.disk.probe_interval: must be between 1ms and 1h0m0s, got -1s`}},
		{"disk too small", good + "cache:\n  disk:\n    path: x\n    size: 32MiB\n",
			[]string{`7: cache.disk.size: must be 0 (the whole device) or at least 4 regions`}},
		{"contradicting key rules", good + "key:\n  ignore_query: true\n  sort_query: true\n",
			[]string{`5: key.ignore_query: `}},
		{"bad header name", good + "key:\n  include_headers: [\"X Dev\"]\n",
			[]string{`5: key.include_headers[0]: bad header name`}},
		{"both tokens", good + "admin:\n  purge_token: a\n  purge_token_file: b\n",
			[]string{`6: admin.purge_token_file: set purge_token or`}},
		{"bad address", "listen: \"8080\"\n" + good[len("listen: \":8080\"\n"):],
			[]string{`1: listen: bad address "8080"`}},
		{"duplicate key", good + "listen: \":81\"\n",
			[]string{`4: mapping key "listen" already defined at line 1`}},
		{"syntax error", "listen: [\n", []string{`1: did not find expected node content`}},
		{"two documents", good + "---\nlisten: \":81\"\n", []string{`4: only one YAML document`}},
		{"not a mapping", "- a\n", []string{`1: wrong type: got a seq, want a mapping`}},
		{"heuristic fraction", good + "http:\n  heuristic_fraction: 2\n",
			[]string{`5: http.heuristic_fraction: must be between 0 and 1`}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantLoadProblems(t, tc.yaml, tc.want) })
	}
}

// wantLoadProblems loads yaml as bad.yaml and checks that it is refused
// with exactly the problems want ("line: substring" each, in order; line
// "-": none).
func wantLoadProblems(t *testing.T, yaml string, want []string) {
	t.Helper()
	c, err := Load([]byte(yaml), "bad.yaml")
	if err == nil || c != nil {
		t.Fatalf("Load accepted:\n%s", yaml)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %T does not match ErrInvalid", err)
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %T is not Problems", err)
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(ps), len(want), err)
	}
	for i, p := range ps {
		line, sub, _ := strings.Cut(want[i], ": ")
		got := p.String()
		prefix := "bad.yaml:" + line + ": "
		if line == "-" {
			prefix = "bad.yaml: "
		}
		if !strings.HasPrefix(got, prefix) || !strings.Contains(got, sub) {
			t.Errorf("problem %d = %q, want line %s and %q", i, got, line, sub)
		}
	}
}

func TestApply(t *testing.T) {
	c, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	err = c.Apply(Overrides{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", Origin: "https://o.example:8443",
		CachePath: "/tmp/x.cache", CacheSize: "2GiB", Memory: "64m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:0" || c.Origins[0].URL != "https://o.example:8443" || c.Cache.Disk.Path != "/tmp/x.cache" ||
		c.Cache.Disk.Size != Size(2*GiB) || c.Cache.Memory.Capacity != Size(64*MiB) || len(c.Origins) != 1 {
		t.Fatalf("overrides not applied: %+v", c)
	}
	err = c.Apply(Overrides{Listen: "nope", Origin: "ftp://x", CacheSize: "big", Memory: "-1"})
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 4 {
		t.Fatalf("want 4 problems, got %v", err)
	}
	for i, flag := range []string{"-listen", "-origin", "-cache-size", "-mem"} {
		if ps[i].Field != flag {
			t.Errorf("problem %d names %q, want %q", i, ps[i].Field, flag)
		}
	}
	if c.Listen != "127.0.0.1:0" {
		t.Fatal("a bad override changed the config")
	}
	var empty Config
	if err := empty.Apply(Overrides{Origin: "http://a:1"}); err != nil || len(empty.Origins) != 1 || !empty.Origins[0].Default {
		t.Fatalf("origin override on an empty config: %v %+v", err, empty.Origins)
	}
}

func TestLoadLimits(t *testing.T) {
	big := make([]byte, MaxFileBytes+1)
	if _, err := Load(big, "big.yaml"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("oversized file: %v", err)
	}
	// An alias bomb (9^8 strings once expanded) inside a real key must be
	// refused quickly, not expanded.
	bomb := "key:\n  ignore_params: [&a [x,x,x,x,x,x,x,x,x]"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		bomb += ", &" + name + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]"
		prev = name
	}
	bomb += "]\n"
	start := time.Now()
	_, err := Load([]byte(bomb), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "key.ignore_params") && !strings.Contains(err.Error(), "alias") {
		t.Fatalf("alias bomb: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("alias bomb took %v", d)
	}
	t.Log(err)
}

// FuzzLoad: no panics; what loads validates and round-trips.
func FuzzLoad(f *testing.F) {
	f.Add(Default)
	f.Add([]byte(good))
	for _, name := range []string{"edge.yaml", "shield.yaml"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("origins:\n  - {url: \"http://a:1\", default: true}\n  - url: http://b:1\n"))
	f.Add([]byte("a: &a [x]\nb: [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrInvalid) || err.Error() == "" {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("loaded config does not validate: %v", err)
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Load(out, "fuzz-out.yaml")
		if err != nil || !reflect.DeepEqual(c, back) {
			t.Fatalf("round trip: %v\n%s", err, out)
		}
	})
}

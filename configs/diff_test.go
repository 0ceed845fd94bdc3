package configs

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDiff: each edit of a loaded config is reported under its YAML key,
// marked as needing a restart or not, and Keep sets back exactly the
// keys that need one.
func TestDiff(t *testing.T) {
	base := `
origins:
  - {name: a, url: "http://127.0.0.1:8081"}
cache:
  disk: {path: /tmp/x.cache, size: 1GiB}
`
	for _, tc := range []struct {
		name, extra string
		want        []Change
	}{
		{"same", ``, nil},
		{"origin", `origins: [{name: b, url: "http://127.0.0.1:8082"}]`,
			[]Change{{Key: "origins"}}},
		{"log level", `log: {level: debug}`, []Change{{Key: "log.level"}}},
		{"log format", `log: {format: json}`, []Change{{Key: "log.format", Restart: restartFixed}}},
		{"memory tier", `cache: {memory: {capacity: 64MiB}, disk: {path: /tmp/x.cache, size: 1GiB}}`,
			[]Change{{Key: "cache.memory.capacity", Restart: restartCache}}},
		{"region size", `cache: {disk: {path: /tmp/x.cache, size: 1GiB, region_size: 32MiB}}`,
			[]Change{{Key: "cache.disk.region_size", Restart: restartCache}, // and its default burst, 2 regions
				{Key: "cache.disk.admission.burst", Restart: restartCache}}},
		{"limits", `limits: {fill_timeout: 1m, max_conns: 5, memory: 1GiB}`, []Change{
			{Key: "limits.memory", Restart: restartCache},
			{Key: "limits.max_conns", Restart: restartBuffers},
			{Key: "limits.fill_timeout"}}},
		{"listen and token", `{listen: ":9999", admin: {purge_token: t}}`, []Change{
			{Key: "listen", Restart: restartSockets}, {Key: "admin.purge_token"}}},
		{"key and http", `{key: {ignore_params: [utm]}, http: {default_ttl: 1m}}`, []Change{
			{Key: "key.ignore_params"}, {Key: "http.default_ttl"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, err := Load([]byte(base), "old.yaml")
			if err != nil {
				t.Fatal(err)
			}
			data := base
			if tc.extra != "" {
				data = mergeYAML(t, base, tc.extra)
			}
			c, err := Load([]byte(data), "new.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := Diff(old, c)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Diff = %+v, want %+v", got, tc.want)
			}
			kept := c.Keep(old, got)
			for _, ch := range Diff(old, c) {
				if ch.Restart != "" {
					t.Errorf("after Keep, %s still differs", ch.Key)
				}
			}
			for _, ch := range kept {
				if ch.Restart == "" {
					t.Errorf("Keep set back %s, which a reload applies", ch.Key)
				}
			}
		})
	}
}

// mergeYAML lays the top-level keys of extra over base.
func mergeYAML(t *testing.T, base, extra string) string {
	t.Helper()
	var b, e map[string]any
	if err := yaml.Unmarshal([]byte(base), &b); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(extra), &e); err != nil {
		t.Fatal(err)
	}
	for k, v := range e {
		b[k] = v
	}
	out, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestEveryKeyClassified: each key Diff can report is either applied by a
// reload (reloadKeys) or needs a restart (restartKeys), never both or
// neither: a new config key must be placed on purpose.
func TestEveryKeyClassified(t *testing.T) {
	var keys []string
	var walk func(rt reflect.Type, path string)
	walk = func(rt reflect.Type, path string) {
		if rt.Kind() != reflect.Struct {
			keys = append(keys, path)
			return
		}
		for i := range rt.NumField() {
			k := yamlKey(rt.Field(i))
			if k == "" {
				continue
			}
			if path != "" {
				k = path + "." + k
			}
			walk(rt.Field(i).Type, k)
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	if len(keys) < 40 {
		t.Fatalf("only %d keys found: %v", len(keys), keys)
	}
	for _, k := range keys {
		reload := 0
		for _, p := range reloadKeys {
			if keyMatches(k, p) {
				reload++
			}
		}
		switch restart := restartReason(k) != ""; {
		case reload > 0 && restart:
			t.Errorf("%s is both reloadable and needs a restart", k)
		case reload == 0 && !restart:
			t.Errorf("%s is in neither reloadKeys nor restartKeys: place it (and, if reloadable, make the reload apply it)", k)
		case reload > 1:
			t.Errorf("%s matches %d reloadKeys", k, reload)
		}
	}
}

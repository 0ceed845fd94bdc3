package configs

import (
	"reflect"
	"strings"
)

// Change is one config key whose value differs between two Configs.
type Change struct {
	Key string // YAML path, e.g. "cache.memory.capacity", "origins"
	// Restart is why a running process cannot apply the change ("" when
	// a reload can): it needs the cache device or the memory tier rebuilt,
	// or new sockets.
	Restart string
}

// Reasons a changed key needs a restart (or a binary upgrade, which is a
// restart that keeps the listening sockets).
const (
	restartCache   = "needs the cache device or the memory tier rebuilt"
	restartSockets = "needs the listening sockets opened again"
	restartBuffers = "sizes buffers and pools fixed at start"
	restartFixed   = "fixed at start"
)

// restartKeys are the keys (and, ending in ".", the key prefixes) a
// reload cannot apply; every other key can. Keep in step with the
// proxy's reloadable settings (proxy/settings.go).
var restartKeys = []struct{ key, why string }{
	{"cache.", restartCache}, // devices, sizes, region size, policies, slice size
	{"limits.memory", restartCache},
	{"listen", restartSockets},
	{"admin_listen", restartSockets},
	{"tls.listen", restartSockets},
	{"limits.max_header_bytes", restartBuffers},
	{"limits.max_request_body", restartBuffers},
	{"limits.max_conns", restartBuffers},
	{"cluster.", restartFixed}, // the peers' retrier and the CDN-Loop id
	{"access_log.", restartFixed},
	{"log.format", restartFixed},
	{"edge.", restartFixed}, // the compressor's types, sizes and levels are built at start; early_hints is read from the Options fixed at start
}

// reloadKeys are the keys (and prefixes ending in ".") a reload applies.
// Every key of Config is in exactly one of reloadKeys and restartKeys
// (TestEveryKeyClassified), so that a new key is placed on purpose: one
// listed here must reach the running process (the proxy's reloadable
// settings, or the binary's reload).
var reloadKeys = []string{
	"origins", "key.", "http.", "admin.", "log.level", "tls.cert_file", "tls.key_file",
	"limits.max_fills", "limits.max_large_fills", "limits.fill_timeout", "limits.read_timeout",
	"limits.write_timeout", "limits.idle_timeout", "limits.shutdown_timeout",
}

// restartReason returns why key cannot be reloaded, or "".
func restartReason(key string) string {
	for _, r := range restartKeys {
		if keyMatches(key, r.key) {
			return r.why
		}
	}
	return ""
}

// keyMatches reports whether key is pattern, or under it when pattern
// ends in ".".
func keyMatches(key, pattern string) bool {
	return key == pattern || (strings.HasSuffix(pattern, ".") && strings.HasPrefix(key, pattern))
}

// Diff lists the keys whose values differ from old to new, in the order
// of Config's fields, each marked with why it needs a restart, if it
// does. A list (origins, key.ignore_params, cache.disk.devices) counts as
// one key. Both configs are compared as given: fill defaults in both, or
// in neither.
func Diff(old, new *Config) []Change {
	var out []Change
	diffValue(reflect.ValueOf(old).Elem(), reflect.ValueOf(new).Elem(), "", &out)
	return out
}

func diffValue(a, b reflect.Value, path string, out *[]Change) {
	if a.Kind() != reflect.Struct {
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, Change{Key: path, Restart: restartReason(path)})
		}
		return
	}
	t := a.Type()
	for i := range t.NumField() {
		key := yamlKey(t.Field(i))
		if key == "" {
			continue
		}
		if path != "" {
			key = path + "." + key
		}
		diffValue(a.Field(i), b.Field(i), key, out)
	}
}

// yamlKey is the YAML key of f, or "" for a field YAML does not see.
func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// Keep sets each key of c that changes needs a restart for back to its
// value in old, so that c holds what a reload can apply and old's value
// of the rest. It returns the keys it set back.
func (c *Config) Keep(old *Config, changes []Change) []Change {
	var kept []Change
	for _, ch := range changes {
		if ch.Restart == "" {
			continue
		}
		dst, src := fieldAt(reflect.ValueOf(c).Elem(), ch.Key), fieldAt(reflect.ValueOf(old).Elem(), ch.Key)
		if dst.IsValid() && src.IsValid() {
			dst.Set(src)
			kept = append(kept, ch)
		}
	}
	return kept
}

// fieldAt finds the field of the struct v at a Diff key.
func fieldAt(v reflect.Value, key string) reflect.Value {
	for part := range strings.SplitSeq(key, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		found := reflect.Value{}
		for i := range v.NumField() {
			if yamlKey(v.Type().Field(i)) == part {
				found = v.Field(i)
				break
			}
		}
		if !found.IsValid() {
			return found
		}
		v = found
	}
	return v
}

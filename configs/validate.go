package configs

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Validate reports every problem of c as Problems (wrapping ErrInvalid),
// or nil. Call it after EnsureDefaults: zero values it would have filled
// are problems here. It does not read files or resolve names. Problems
// carry field paths but no lines; Load adds the file and lines.
func (c *Config) Validate() error {
	var ps problems
	checkAddr(&ps, "listen", c.Listen, true)
	checkAddr(&ps, "admin_listen", c.AdminListen, true)
	if c.Listen != "" && c.Listen == c.AdminListen && !strings.HasSuffix(c.Listen, ":0") {
		ps.add("admin_listen", "must differ from listen (%q)", c.Listen)
	}
	c.TLS.validate(&ps)
	validateOrigins(&ps, c.Origins)
	c.Cache.validate(&ps)
	c.Key.validate(&ps)
	c.HTTP.validate(&ps)
	c.Limits.validate(&ps)
	c.Cluster.validate(&ps)
	if c.Admin.PurgeToken != "" && c.Admin.PurgeTokenFile != "" {
		ps.add("admin.purge_token_file", "set purge_token or purge_token_file, not both")
	}
	checkEnum(&ps, "log.level", c.Log.Level, "debug", "info", "warn", "error")
	checkEnum(&ps, "log.format", c.Log.Format, "text", "json")
	c.AccessLog.validate(&ps)
	c.Edge.validate(&ps)
	return ps.err()
}

func (t *TLS) validate(ps *problems) {
	if t.Listen == "" {
		if t.CertFile != "" || t.KeyFile != "" {
			ps.add("tls.listen", "required when cert_file or key_file is set")
		}
		return
	}
	checkAddr(ps, "tls.listen", t.Listen, true)
	if t.CertFile == "" {
		ps.add("tls.cert_file", "required when tls.listen is set")
	}
	if t.KeyFile == "" {
		ps.add("tls.key_file", "required when tls.listen is set")
	}
}

func validateOrigins(ps *problems, origins []Origin) {
	if len(origins) == 0 {
		// Not a problem yet: the -origin flag may supply one after Load.
		// Compose, which runs after the flags, requires it.
		return
	}
	names := map[string]int{}
	hosts := map[string]int{}
	firstDefault := -1
	for i := range origins {
		o := &origins[i]
		f := fmt.Sprintf("origins[%d]", i)
		o.validate(ps, f)
		if j, dup := names[o.Name]; dup && o.Name != "" {
			ps.add(f+".name", "duplicate origin name %q (also origins[%d])", o.Name, j)
		}
		names[o.Name] = i
		for k, h := range o.Hosts {
			if j, dup := hosts[strings.ToLower(h)]; dup {
				ps.add(fmt.Sprintf("%s.hosts[%d]", f, k), "host %q is also routed to origins[%d]", h, j)
			}
			hosts[strings.ToLower(h)] = i
		}
		switch {
		case o.Default && firstDefault >= 0:
			ps.add(f+".default", "only one origin may be the default (origins[%d] is)", firstDefault)
		case o.Default:
			firstDefault = i
		case len(o.Hosts) == 0:
			ps.add(f+".hosts", "an origin that is not the default needs hosts")
		}
	}
}

func (o *Origin) validate(ps *problems, f string) {
	checkOriginURL(ps, f+".url", o.URL)
	if o.Name == "" {
		ps.add(f+".name", "required")
	}
	for k, h := range o.Hosts {
		if !validHostPattern(h) {
			ps.add(fmt.Sprintf("%s.hosts[%d]", f, k), "bad host %q: want a host name, optionally *.suffix and :port", h)
		}
	}
	checkEnum(ps, f+".host_header", o.HostHeader, HostPreserve, HostOrigin)
	if o.CAFile != "" && !strings.HasPrefix(strings.ToLower(o.URL), "https://") {
		ps.add(f+".ca_file", "only for an https origin")
	}
	checkPositiveDur(ps, f+".timeouts.connect", o.Timeouts.Connect)
	checkPositiveDur(ps, f+".timeouts.read", o.Timeouts.Read)
	checkPositiveDur(ps, f+".timeouts.idle", o.Timeouts.Idle)
	checkRange(ps, f+".max_conns", int64(o.MaxConns), 1, 1<<20)
	checkRange(ps, f+".max_header_bytes", int64(o.MaxHeaderBytes), 4*KiB, MiB)
	if o.S3 != nil {
		o.S3.validate(ps, f+".s3")
	}
}

func (c *Cache) validate(ps *problems) {
	checkRange(ps, "cache.memory.capacity", int64(c.Memory.Capacity), MiB, 1<<50)
	checkEnum(ps, "cache.memory.policy", c.Memory.Policy, "s3fifo", "lru", "fifo")
	c.Disk.validate(ps)
	checkEnum(ps, "cache.write_policy", c.WritePolicy, "eviction", "insertion")
	checkEnum(ps, "cache.promotion", c.Promotion, "second-hit", "first-hit", "never")
	if c.Disk.regionOK() { // else region_size's own problem says it
		checkRange(ps, "cache.slice_size", int64(c.SliceSize), 4*KiB, int64(c.Disk.RegionSize)/2)
	}
	checkRange(ps, "cache.max_object_size", int64(c.MaxObjectSize), 0, 1<<62)
	checkRange(ps, "cache.read_ahead", int64(c.ReadAhead), -1, 1024)
}

func (d *Disk) validate(ps *problems) {
	checkAligned(ps, "cache.disk.region_size", d.RegionSize, MiB, GiB)
	if d.regionOK() { // else region_size's own problem says it
		checkAligned(ps, "cache.disk.buffer_size", d.BufferSize, 4*KiB, int64(d.RegionSize))
		for i, dev := range d.List() {
			if dev.Size < 0 || (dev.Size > 0 && dev.Size < 4*d.RegionSize) {
				ps.add(d.deviceField(i, ".size"), "must be 0 (the whole device) or at least 4 regions (%v), got %d", 4*d.RegionSize, int64(dev.Size))
			}
		}
	}
	d.validateDevices(ps)
	checkRange(ps, "cache.disk.flushers", int64(d.Flushers), 1, 64)
	checkRange(ps, "cache.disk.reclaimers", int64(d.Reclaimers), 1, 64)
	checkRange(ps, "cache.disk.admission.rate", int64(d.Admission.Rate), 1, 1<<50)
	checkRange(ps, "cache.disk.admission.burst", int64(d.Admission.Burst), 1, 1<<50)
	checkRange(ps, "cache.disk.admission.min_frequency", int64(d.Admission.MinFrequency), 0, 255)
	if w := d.Admission.DriveWritesPerDay; w != -1 && !(w > 0 && w <= 100) {
		ps.add("cache.disk.admission.drive_writes_per_day", "must be in (0, 100], or -1 (never write past rate), got %v", w)
	}
	checkEnum(ps, "cache.disk.runtime", d.Runtime, "disabled", "unified", "separated", "uring")
	checkRange(ps, "cache.disk.read_workers", int64(d.ReadWorkers), 1, 1024)
	checkRange(ps, "cache.disk.write_workers", int64(d.WriteWorkers), 1, 1024)
	checkEnum(ps, "cache.disk.recovery", d.Recovery, "none", "quiet", "strict")
	checkDurRange(ps, "cache.disk.read_timeout", d.ReadTimeout, time.Millisecond, time.Minute)
	if d.ErrorLimit != -1 {
		checkRange(ps, "cache.disk.error_limit", int64(d.ErrorLimit), 1, 1<<20)
	}
	checkDurRange(ps, "cache.disk.error_window", d.ErrorWindow, time.Millisecond, 24*time.Hour)
	checkDurRange(ps, "cache.disk.probe_interval", d.ProbeInterval, time.Millisecond, time.Hour)
}

// validateDevices checks the list form: not mixed with path and size,
// every path set and named once.
func (d *Disk) validateDevices(ps *problems) {
	if len(d.Devices) == 0 {
		return
	}
	if d.Path != "" || d.Size != 0 {
		ps.add("cache.disk.devices", "set path and size, or devices, not both")
	}
	seen := map[string]int{}
	for i, dev := range d.Devices {
		if dev.Path == "" {
			ps.add(d.deviceField(i, ".path"), "a device needs a path")
			continue
		}
		p := filepath.Clean(dev.Path)
		if j, ok := seen[p]; ok {
			ps.add(d.deviceField(i, ".path"), "%s is devices[%d] already", dev.Path, j)
			continue
		}
		seen[p] = i
	}
}

func (d *Disk) regionOK() bool {
	return d.RegionSize >= Size(MiB) && d.RegionSize <= Size(GiB) && d.RegionSize%Size(4*KiB) == 0
}

func (k *Key) validate(ps *problems) {
	if k.IgnoreQuery && (k.SortQuery || len(k.IgnoreParams) > 0) {
		ps.add("key.ignore_query", "ignore_query drops the whole query: sort_query and ignore_params would do nothing")
	}
	for i, p := range k.IgnoreParams {
		if p == "" || strings.ContainsAny(p, "&= ") {
			ps.add(fmt.Sprintf("key.ignore_params[%d]", i), "bad parameter name %q", p)
		}
	}
	for i, h := range k.IncludeHeaders {
		if !validToken(h) {
			ps.add(fmt.Sprintf("key.include_headers[%d]", i), "bad header name %q", h)
		}
	}
}

func (h *HTTP) validate(ps *problems) {
	checkNonNegDur(ps, "http.default_ttl", h.DefaultTTL)
	if !(h.HeuristicFraction >= 0 && h.HeuristicFraction <= 1) {
		ps.add("http.heuristic_fraction", "must be between 0 and 1, got %v", h.HeuristicFraction)
	}
	checkNonNegDur(ps, "http.heuristic_max", h.HeuristicMax)
	checkNonNegDur(ps, "http.grace", h.Grace)
	checkRange(ps, "http.max_variants", int64(h.MaxVariants), 1, 1024)
}

func (l *Limits) validate(ps *problems) {
	checkRange(ps, "limits.memory", int64(l.Memory), 0, 1<<50)
	checkRange(ps, "limits.max_header_bytes", int64(l.MaxHeaderBytes), KiB, MiB)
	checkRange(ps, "limits.max_conns", int64(l.MaxConns), 1, 1<<24)
	checkRange(ps, "limits.max_request_body", int64(l.MaxRequestBody), 0, 1<<50)
	checkPositiveDur(ps, "limits.fill_timeout", l.FillTimeout)
	checkPositiveDur(ps, "limits.read_timeout", l.ReadTimeout)
	checkPositiveDur(ps, "limits.write_timeout", l.WriteTimeout)
	checkPositiveDur(ps, "limits.idle_timeout", l.IdleTimeout)
	checkPositiveDur(ps, "limits.shutdown_timeout", l.ShutdownTimeout)
}

// checkAddr accepts "host:port" and ":port" with a numeric port 0..65535
// (0 picks a free port; tests use it).
func checkAddr(ps *problems, field, addr string, required bool) {
	if addr == "" {
		if required {
			ps.add(field, "required")
		}
		return
	}
	if err := ValidateAddr(addr); err != nil {
		ps.add(field, "%v", err)
	}
}

// ValidateAddr checks a listen address: "host:port" or ":port", numeric
// port 0..65535.
func ValidateAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad address %q: want host:port or :port", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		return fmt.Errorf("bad port in %q: want 0..65535", addr)
	}
	if strings.ContainsAny(host, "/ ") {
		return fmt.Errorf("bad host in %q", addr)
	}
	return nil
}

// ValidateOriginURL checks an origin URL: http or https, a host, an
// optional numeric port, and nothing else (no path, query or user info).
func ValidateOriginURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("bad URL %q", raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("bad URL %q: scheme must be http or https", raw)
	case u.Hostname() == "":
		return fmt.Errorf("bad URL %q: no host", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return fmt.Errorf("bad URL %q: only scheme, host and port are allowed", raw)
	case u.Path != "" && u.Path != "/":
		return fmt.Errorf("bad URL %q: an origin URL has no path", raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return fmt.Errorf("bad URL %q: port must be 1..65535", raw)
		}
	}
	return nil
}

func checkOriginURL(ps *problems, field, raw string) {
	if raw == "" {
		ps.add(field, "required")
		return
	}
	if err := ValidateOriginURL(raw); err != nil {
		ps.add(field, "%v", err)
	}
}

func checkEnum(ps *problems, field, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	ps.add(field, "bad value %q: want one of %s", v, strings.Join(allowed, ", "))
}

func checkRange(ps *problems, field string, v, lo, hi int64) {
	if v < lo || v > hi {
		ps.add(field, "must be between %d and %d, got %d", lo, hi, v)
	}
}

// checkAligned wants a multiple of 4KiB between lo and hi.
func checkAligned(ps *problems, field string, v Size, lo, hi int64) {
	if int64(v) < lo || int64(v) > hi || v%Size(4*KiB) != 0 {
		ps.add(field, "must be a multiple of 4KiB between %v and %v, got %d", Size(lo), Size(hi), int64(v))
	}
}

func checkDurRange(ps *problems, field string, d Duration, lo, hi time.Duration) {
	if d.D() < lo || d.D() > hi {
		ps.add(field, "must be between %v and %v, got %v", lo, hi, d)
	}
}

func checkNonNegDur(ps *problems, field string, d Duration) {
	if d < 0 {
		ps.add(field, "must not be negative, got %v", d)
	}
}

func checkPositiveDur(ps *problems, field string, d Duration) {
	if d <= 0 {
		ps.add(field, "must be positive, got %v", d)
	}
}

// validHostPattern: a host name or IP, optionally "*." in front and a port.
func validHostPattern(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if host, port, err := net.SplitHostPort(h); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return false
		}
		h = strings.Trim(host, "[]")
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// validToken: an HTTP field name (RFC 9110 token).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

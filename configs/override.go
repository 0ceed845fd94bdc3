package configs

import "fmt"

// Overrides are the binary's flags that override the config. An empty
// field overrides nothing. Apply them after Load, then EnsureDefaults and
// Validate again.
type Overrides struct {
	Listen      string // -listen
	AdminListen string // -admin-listen
	Origin      string // -origin: the default origin's URL
	CachePath   string // -cache-path
	CacheSize   string // -cache-size, a ParseSize string
	Memory      string // -mem, a ParseSize string
	// CgroupLimit is not a flag: the memory cgroup's limit the binary
	// found (0: none), from which a limits.memory of 0 is derived.
	CgroupLimit int64
}

// Apply sets the overridden fields of c. Each malformed value is a Problem
// whose Field names the flag; all are reported together.
func (c *Config) Apply(o Overrides) error {
	var ps problems
	if o.Listen != "" {
		setChecked(&ps, "-listen", &c.Listen, o.Listen, ValidateAddr)
	}
	if o.AdminListen != "" {
		setChecked(&ps, "-admin-listen", &c.AdminListen, o.AdminListen, ValidateAddr)
	}
	if o.Origin != "" {
		if err := ValidateOriginURL(o.Origin); err != nil {
			ps.add("-origin", "%v", err)
		} else {
			c.setDefaultOrigin(o.Origin)
		}
	}
	// -cache-path and -cache-size set the one-device form: -cache-path
	// replaces a devices list; -cache-size alone cannot say which of its
	// devices it means.
	if o.CachePath != "" {
		c.Cache.Disk.Path, c.Cache.Disk.Devices = o.CachePath, nil
	}
	if o.CacheSize != "" && len(c.Cache.Disk.Devices) > 0 {
		ps.add("-cache-size", "cache.disk.devices lists several devices: set each size there, or give -cache-path too")
	} else {
		setSizeFlag(&ps, "-cache-size", &c.Cache.Disk.Size, o.CacheSize)
	}
	setSizeFlag(&ps, "-mem", &c.Cache.Memory.Capacity, o.Memory)
	c.cgroupLimit = o.CgroupLimit
	return ps.err()
}

// setDefaultOrigin points the default origin (or the only one) at url,
// adding a default origin when there is none.
func (c *Config) setDefaultOrigin(url string) {
	for i := range c.Origins {
		if c.Origins[i].Default || len(c.Origins) == 1 {
			c.Origins[i].URL = url
			return
		}
	}
	c.Origins = append(c.Origins, Origin{Name: "default", URL: url, Default: true})
}

func setChecked(ps *problems, flag string, dst *string, v string, check func(string) error) {
	if err := check(v); err != nil {
		ps.add(flag, "%v", err)
		return
	}
	*dst = v
}

func setSizeFlag(ps *problems, flag string, dst *Size, v string) {
	if v == "" {
		return
	}
	n, err := ParseSize(v)
	if err != nil {
		ps.add(flag, "%v", err)
		return
	}
	*dst = Size(n)
}

// String renders o for logs.
func (o Overrides) String() string {
	return fmt.Sprintf("listen=%q admin-listen=%q origin=%q cache-path=%q cache-size=%q mem=%q",
		o.Listen, o.AdminListen, o.Origin, o.CachePath, o.CacheSize, o.Memory)
}

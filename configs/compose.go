package configs

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"strata/admission"
	"strata/blockdev"
	"strata/hybrid"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
	"strata/proxy"
)

// Parts are the Options of each package the binary wires, composed from
// one Config by Compose. The binary adds what a file cannot say: the
// opened Device and admission Controller in Cache, the coarse Clock in
// Admission, Logger and Registerer in Proxy.
type Parts struct {
	// Devices are the disk tier's devices in config order (cache.disk's
	// path and size, or each of cache.disk.devices), to open and put in
	// Cache.Devices. Empty: the cache is memory only.
	Devices   []DevicePart
	Admission admission.Options
	Cache     hybrid.Options
	Proxy     proxy.Options
	// Memory is limits.memory resolved and split; the disk write queue
	// and the proxy's fill bounds are already sized from it. The binary
	// sets the Go heap's soft limit from it.
	Memory Budget
}

// DevicePart is one disk device to open: a block device or a file.
type DevicePart struct {
	Path    string
	Options blockdev.Options
}

// maxTokenFile bounds a purge token file: a token is a line, not a blob.
const maxTokenFile = 4 << 10

// Compose maps c (loaded, defaults filled, valid) to each package's
// Options, reads the purge token file, and runs each package's
// EnsureDefaults and Validate on its part, so that what the config allows
// but a package refuses is found before anything is opened. Every problem
// is reported at once as Problems naming the config field, without lines
// (Problems.Locate adds them).
func (c *Config) Compose(logger *slog.Logger) (*Parts, error) {
	var ps problems
	p := &Parts{}
	for i, d := range c.Cache.Disk.List() {
		dp := DevicePart{Path: d.Path, Options: blockdev.Options{Size: d.Size.Bytes(), Logger: logger}}
		checkPart(&ps, c.Cache.Disk.deviceField(i, ""), dp.Options.EnsureDefaults, dp.Options.Validate)
		p.Devices = append(p.Devices, dp)
	}
	p.Admission = c.admissionOptions()
	p.Cache = c.cacheOptions(logger)
	c.checkRegions(&ps)
	p.Proxy = c.proxyOptions(&ps)
	p.Proxy.Logger = logger
	if len(p.Devices) > 0 {
		// Purges by tag and prefix are kept beside the (first) cache
		// device, so that they survive a restart as its contents do.
		p.Proxy.Purge.StateFile = p.Devices[0].Path + ".purge"
	}
	checkPart(&ps, "cache.disk.admission", p.Admission.EnsureDefaults, p.Admission.Validate)
	checkPart(&ps, "cache", func() { p.Cache.EnsureDefaults() }, p.Cache.Validate)
	if len(p.Devices) > 0 { // hybrid checks the engine's options only with a device
		checkPart(&ps, "cache.disk", func() { p.Cache.Disk.EnsureDefaults() }, p.Cache.Disk.Validate)
	}
	if len(c.Origins) == 0 {
		ps.add("origins", "at least one origin is required (in the config or with -origin)")
	}
	checkPart(&ps, "origins", p.Proxy.EnsureDefaults, p.Proxy.Validate)
	p.Memory = c.budget(&ps)
	p.applyBudget()
	if err := ps.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkPart runs a package's EnsureDefaults and Validate and adds one
// problem per line of what Validate reports.
func checkPart(ps *problems, field string, ensure func(), validate func() error) {
	ensure()
	err := validate()
	if err == nil {
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		ps.add(field, "%s", line)
	}
}

// admissionOptions: min_frequency 0 turns the frequency filter off,
// drive_writes_per_day -1 the fill past rate. Fill.DeviceBytes is left
// for the binary to set from the devices it opens (a size of 0 is the
// whole device, known only then).
func (c *Config) admissionOptions() admission.Options {
	a := c.Cache.Disk.Admission
	o := admission.Options{
		RateLimit: admission.RateOptions{BytesPerSecond: int64(a.Rate), BurstBytes: a.Burst.Bytes()},
		Frequency: admission.FrequencyOptions{Disabled: a.MinFrequency == 0, MinFrequency: a.MinFrequency},
		Fill:      admission.FillOptions{Disabled: a.DriveWritesPerDay < 0},
	}
	if a.DriveWritesPerDay > 0 {
		o.Fill.DriveWritesPerDay = a.DriveWritesPerDay
	}
	return o
}

// superblockBytes is what the engine keeps before the first region: two
// superblock copies of a 4 KiB block (larger on devices with larger
// blocks, which Open then reports).
const superblockBytes = 2 * 4096

// checkRegions: the engine needs flushers+2 regions after its superblock
// (one being written per flusher, and clean ones ready), more than the
// config's own "4 regions" bound when the flushers are many or the size
// an exact multiple of the region.
func (c *Config) checkRegions(ps *problems) {
	d := &c.Cache.Disk
	if d.RegionSize <= 0 {
		return
	}
	for i, dev := range d.List() {
		if dev.Size <= 0 {
			continue
		}
		n := (dev.Size.Bytes() - superblockBytes) / d.RegionSize.Bytes()
		if need := int64(d.Flushers) + 2; n < need {
			ps.add(d.deviceField(i, ".size"), "%v holds %d regions of %v after the superblock; %d flushers need %d: raise size or lower region_size",
				dev.Size, n, d.RegionSize, d.Flushers, need)
		}
	}
}

func (c *Config) cacheOptions(logger *slog.Logger) hybrid.Options {
	d := c.Cache.Disk
	return hybrid.Options{
		Memory: memory.Options{
			Capacity: c.Cache.Memory.Capacity.Bytes(),
			Policy:   memory.Policy(c.Cache.Memory.Policy),
		},
		Disk: disk.Options{
			RegionSize:   d.RegionSize.Bytes(),
			BufferSize:   int(d.BufferSize),
			Flushers:     d.Flushers,
			Reclaimers:   d.Reclaimers,
			Runtime:      disk.RuntimeMode(d.Runtime),
			ReadWorkers:  d.ReadWorkers,
			WriteWorkers: d.WriteWorkers,
			Recovery:     disk.RecoveryMode(d.Recovery),
			Logger:       logger,

			ReadBufferBytes: c.readBufferBytes(), // what the memory budget holds for them

			ReadTimeout:   d.ReadTimeout.D(),
			ErrorLimit:    d.ErrorLimit,
			ErrorWindow:   d.ErrorWindow.D(),
			ProbeInterval: d.ProbeInterval.D(),
		},
		WritePolicy: hybrid.WritePolicy(c.Cache.WritePolicy),
		Promotion:   c.Cache.promotion(),
		WarmBytes:   c.Cache.WarmBytes.Bytes(),
		WarmRate:    c.Cache.WarmRate.Bytes(),
	}
}

func (c *Config) proxyOptions(ps *problems) proxy.Options {
	l := c.Limits
	o := proxy.Options{
		Policy: proxy.PolicyOptions{
			Shared:            true,
			HeuristicFraction: c.HTTP.HeuristicFraction,
			HeuristicMax:      c.HTTP.HeuristicMax.D(),
			DefaultTTL:        c.HTTP.DefaultTTL.D(),
			StoreSetCookie:    c.HTTP.StoreSetCookie,
			Grace:             c.HTTP.Grace.D(),

			IgnoreSurrogateControl: c.HTTP.IgnoreSurrogateControl,
			SurrogateToken:         c.HTTP.SurrogateToken,
			TargetedField:          c.HTTP.TargetedCacheControl,
			IgnoreCDNCacheControl:  c.HTTP.IgnoreCDNCacheControl,
		},
		MaxVariants:   c.HTTP.MaxVariants,
		MaxFills:      l.MaxFills,
		MaxLargeFills: l.MaxLargeFills,
		FillTimeout:   l.FillTimeout.D(),
		Key: proxy.KeyOptions{
			IgnoreQuery:    c.Key.IgnoreQuery,
			SortQuery:      c.Key.SortQuery,
			IgnoreParams:   c.Key.IgnoreParams,
			IncludeHeaders: c.Key.IncludeHeaders,
		},
		SliceSize:          int(c.Cache.SliceSize),
		MaxObjectSize:      c.Cache.MaxObjectSize.Bytes(),
		ReadAhead:          c.Cache.ReadAhead,
		MaxHeaderBytes:     int(l.MaxHeaderBytes),
		MaxRequestBodySize: int(l.MaxRequestBody),
		MaxConns:           l.MaxConns,
		ReadTimeout:        l.ReadTimeout.D(),
		WriteTimeout:       l.WriteTimeout.D(),
		ClientIdleTimeout:  l.IdleTimeout.D(),
		PurgeToken:         c.purgeToken(ps),
		Loop:               c.Cluster.loopOptions(),
		Compress:           c.Edge.compressOptions(),
		EarlyHints:         c.Edge.EarlyHints != nil && *c.Edge.EarlyHints,
		Peers:              c.Cluster.peerOptions(),
	}
	for i, org := range c.Origins {
		o.Origins = append(o.Origins, originOptions(ps, i, org))
	}
	return o
}

func originOptions(ps *problems, i int, org Origin) proxy.OriginOptions {
	for k, h := range org.Hosts {
		// The proxy's router matches host names, port ignored.
		if _, _, err := net.SplitHostPort(h); err == nil {
			ps.add(fmt.Sprintf("origins[%d].hosts[%d]", i, k), "host %q: the proxy routes by host name, ignoring the port: leave the port out", h)
		}
	}
	var s3o *proxy.S3Options
	if org.S3 != nil {
		s3o = org.S3.options(ps, fmt.Sprintf("origins[%d].s3", i))
	}
	return proxy.OriginOptions{
		S3:              s3o,
		URL:             org.URL,
		Hosts:           org.Hosts,
		Default:         org.Default,
		HostHeader:      org.HostHeader,
		CAFile:          org.CAFile,
		ConnectTimeout:  org.Timeouts.Connect.D(),
		ResponseTimeout: org.Timeouts.Read.D(),
		IdleTimeout:     org.Timeouts.Idle.D(),
		MaxConns:        org.MaxConns,
		MaxHeaderBytes:  int(org.MaxHeaderBytes),
	}
}

// purgeToken returns the configured token, reading purge_token_file when
// set (its first line, surrounding space trimmed).
func (c *Config) purgeToken(ps *problems) string {
	if c.Admin.PurgeTokenFile == "" {
		return c.Admin.PurgeToken
	}
	b, err := readSmall(c.Admin.PurgeTokenFile, maxTokenFile)
	if err != nil {
		ps.add("admin.purge_token_file", "%v", err)
		return ""
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSpace(tok)
	if tok == "" {
		ps.add("admin.purge_token_file", "%s holds no token", c.Admin.PurgeTokenFile)
	}
	return tok
}

func readSmall(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: larger than %v", path, Size(limit))
	}
	return os.ReadFile(path)
}

// CheckFiles reports, as Problems, each file the config names that cannot
// be read: tls.cert_file, tls.key_file, every origins[i].ca_file and
// admin.purge_token_file; and each cache device of size 0 that does not
// exist (a file device is created on first start, and needs a size for
// that).
func (c *Config) CheckFiles() error {
	var ps problems
	check := func(field, path string) {
		if path == "" {
			return
		}
		f, err := os.Open(path)
		if err != nil {
			ps.add(field, "%v", unwrapPath(err))
			return
		}
		f.Close()
	}
	check("tls.cert_file", c.TLS.CertFile)
	check("tls.key_file", c.TLS.KeyFile)
	for i, o := range c.Origins {
		check(fmt.Sprintf("origins[%d].ca_file", i), o.CAFile)
		if o.S3 != nil {
			check(fmt.Sprintf("origins[%d].s3.secret_access_key_file", i), o.S3.SecretAccessKeyFile)
		}
	}
	check("admin.purge_token_file", c.Admin.PurgeTokenFile)
	for i, d := range c.Cache.Disk.List() {
		if _, err := os.Stat(d.Path); d.Size == 0 && errors.Is(err, os.ErrNotExist) {
			ps.add(c.Cache.Disk.deviceField(i, ".size"), "%s does not exist: a file to create needs a size", d.Path)
		}
	}
	return ps.err()
}

// unwrapPath renders an *os.PathError as "open PATH: reason".
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, pe.Path, pe.Err)
	}
	return err
}

// Locate fills in the file name and line of each problem whose field is
// found in data (the config file's bytes; name is how to call it), as
// Load does for its own problems, and orders them by line.
func (ps Problems) Locate(data []byte, name string) Problems {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return ps
	}
	pos := newPositions(&root)
	out := make(Problems, len(ps))
	for i, p := range ps {
		if p.File == "" {
			p.File = name
			p.Line = pos.line(p.Field)
		}
		out[i] = p
	}
	sortByLine(out)
	return out
}

func sortByLine(ps Problems) {
	sort.SliceStable(ps, func(i, j int) bool { return lineKey(ps[i].Line) < lineKey(ps[j].Line) })
}

// promotion is cache.promotion, or never when cache.promote is false.
func (c *Cache) promotion() hybrid.Promotion {
	if !c.PromoteEnabled() {
		return hybrid.PromoteNever
	}
	return hybrid.Promotion(c.Promotion)
}

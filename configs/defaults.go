package configs

import (
	"net/url"
	"time"

	"strata/admission"
	"strata/hybrid"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
	"strata/proxy"
)

// Defaults of the fields whose zero value means "the default": each is
// the owning package's own (proxy.Default*, hybrid's, admission's), named
// here once; only the binary's own settings (listeners, shutdown, logs)
// and values derived from other keys (the admission burst: two regions)
// are defined here. default.yaml spells them out; TestDefaultIsDefaults
// checks the file against these and TestPackagesApplyDefaults against
// what each package gives a zero field.
const (
	DefaultListen          = ":8080"
	DefaultAdminListen     = "127.0.0.1:9090"
	DefaultMemoryCapacity  = memory.DefaultCapacity
	DefaultPolicy          = string(memory.DefaultPolicy)
	DefaultRegionSize      = disk.DefaultRegionSize
	DefaultBufferSize      = disk.DefaultBufferSize
	DefaultFlushers        = disk.DefaultFlushers
	DefaultReclaimers      = disk.DefaultReclaimers
	DefaultAdmissionRate   = admission.DefaultBytesPerSecond
	DefaultDriveWrites     = admission.DefaultDriveWritesPerDay
	DefaultRuntime         = string(disk.DefaultRuntime)
	DefaultReadWorkers     = disk.DefaultReadWorkers
	DefaultWriteWorkers    = disk.DefaultFlushers // the disk default: one per flusher
	DefaultRecovery        = string(disk.DefaultRecovery)
	DefaultDiskReadTimeout = disk.DefaultReadTimeout
	DefaultErrorLimit      = disk.DefaultErrorLimit
	DefaultErrorWindow     = disk.DefaultErrorWindow
	DefaultProbeInterval   = disk.DefaultProbeInterval
	DefaultWritePolicy     = string(hybrid.DefaultWritePolicy)
	DefaultPromotion       = string(hybrid.DefaultPromotion)
	DefaultSliceSize       = proxy.DefaultSliceSize
	DefaultMaxObjectSize   = proxy.DefaultMaxObjectSize
	DefaultReadAhead       = proxy.DefaultReadAhead
	DefaultOriginMaxConns  = proxy.DefaultOriginMaxConns
	DefaultOriginMaxHeader = proxy.DefaultOriginMaxHeaderBytes
	DefaultConnectTimeout  = proxy.DefaultOriginConnectTimeout
	DefaultReadTimeout     = proxy.DefaultOriginResponseTimeout
	DefaultIdleTimeout     = proxy.DefaultOriginIdleTimeout
	DefaultHeuristicFrac   = proxy.DefaultHeuristicFraction
	DefaultHeuristicMax    = proxy.DefaultHeuristicMax
	DefaultMaxVariants     = proxy.DefaultMaxVariants
	DefaultMaxHeaderBytes  = proxy.DefaultMaxHeaderBytes
	DefaultMaxConns        = proxy.DefaultMaxConns
	DefaultMaxFills        = proxy.DefaultMaxFills
	DefaultMaxLargeFills   = proxy.DefaultMaxLargeFills
	DefaultFillTimeout     = proxy.DefaultFillTimeout
	DefaultSurrogateToken  = proxy.DefaultSurrogateToken
	DefaultTargetedField   = proxy.DefaultTargetedField
	DefaultMaxRequestBody  = proxy.DefaultMaxRequestBodySize
	DefaultClientRead      = proxy.DefaultReadTimeout
	DefaultClientWrite     = proxy.DefaultWriteTimeout
	DefaultClientIdle      = proxy.DefaultClientIdleTimeout
	DefaultShutdownTimeout = 30 * time.Second
	DefaultLogLevel        = "info"
	DefaultLogFormat       = "text"
)

// EnsureDefaults fills every zero field with its default and returns c.
// It is idempotent. Negative values are left for Validate to report.
func (c *Config) EnsureDefaults() *Config {
	setStr(&c.Listen, DefaultListen)
	setStr(&c.AdminListen, DefaultAdminListen)
	if len(c.Origins) == 0 {
		c.Origins = nil // "origins: []" and no key at all mean the same
	}
	for i := range c.Origins {
		c.Origins[i].ensureDefaults()
	}
	if len(c.Origins) == 1 {
		c.Origins[0].Default = true
	}
	c.Cache.ensureDefaults()
	c.Key.IgnoreParams = nilIfEmpty(c.Key.IgnoreParams)
	c.Key.IncludeHeaders = nilIfEmpty(c.Key.IncludeHeaders)
	c.HTTP.ensureDefaults()
	c.Limits.ensureDefaults()
	c.Cluster.ensureDefaults()
	setStr(&c.Log.Level, DefaultLogLevel)
	setStr(&c.Log.Format, DefaultLogFormat)
	c.AccessLog.ensureDefaults()
	c.Edge.ensureDefaults()
	return c
}

func (o *Origin) ensureDefaults() {
	if o.Name == "" {
		if u, err := url.Parse(o.URL); err == nil {
			o.Name = u.Host
		}
	}
	o.Hosts = nilIfEmpty(o.Hosts)
	setStr(&o.HostHeader, HostPreserve)
	setDur(&o.Timeouts.Connect, DefaultConnectTimeout)
	setDur(&o.Timeouts.Read, DefaultReadTimeout)
	setDur(&o.Timeouts.Idle, DefaultIdleTimeout)
	setInt(&o.MaxConns, DefaultOriginMaxConns)
	setSize(&o.MaxHeaderBytes, DefaultOriginMaxHeader)
	if o.S3 != nil {
		o.S3.ensureDefaults()
	}
}

func (c *Cache) ensureDefaults() {
	setSize(&c.Memory.Capacity, DefaultMemoryCapacity)
	setStr(&c.Memory.Policy, DefaultPolicy)
	d := &c.Disk
	setSize(&d.RegionSize, DefaultRegionSize)
	setSize(&d.BufferSize, min(DefaultBufferSize, int64(d.RegionSize)))
	setInt(&d.Flushers, DefaultFlushers)
	setInt(&d.Reclaimers, DefaultReclaimers)
	if d.Admission.Rate == 0 {
		d.Admission.Rate = Rate(DefaultAdmissionRate)
	}
	setSize(&d.Admission.Burst, 2*int64(d.RegionSize))
	if d.Admission.DriveWritesPerDay == 0 {
		d.Admission.DriveWritesPerDay = DefaultDriveWrites
	}
	setStr(&d.Runtime, DefaultRuntime)
	setInt(&d.ReadWorkers, DefaultReadWorkers)
	setInt(&d.WriteWorkers, DefaultWriteWorkers)
	setStr(&d.Recovery, DefaultRecovery)
	setDur(&d.ReadTimeout, DefaultDiskReadTimeout)
	setInt(&d.ErrorLimit, DefaultErrorLimit)
	setDur(&d.ErrorWindow, DefaultErrorWindow)
	setDur(&d.ProbeInterval, DefaultProbeInterval)
	setStr(&c.WritePolicy, DefaultWritePolicy)
	setStr(&c.Promotion, DefaultPromotion)
	if c.Promote == nil {
		t := true
		c.Promote = &t
	}
	setSize(&c.SliceSize, DefaultSliceSize)
	setSize(&c.MaxObjectSize, DefaultMaxObjectSize)
	setSize(&c.WarmRate, hybrid.DefaultWarmRate)
	setInt(&c.ReadAhead, DefaultReadAhead)
}

func (h *HTTP) ensureDefaults() {
	if h.HeuristicFraction == 0 {
		h.HeuristicFraction = DefaultHeuristicFrac
	}
	setDur(&h.HeuristicMax, DefaultHeuristicMax)
	setInt(&h.MaxVariants, DefaultMaxVariants)
	setStr(&h.SurrogateToken, DefaultSurrogateToken)
	setStr(&h.TargetedCacheControl, DefaultTargetedField)
}

func (l *Limits) ensureDefaults() {
	setSize(&l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setInt(&l.MaxConns, DefaultMaxConns)
	setInt(&l.MaxFills, DefaultMaxFills)
	setInt(&l.MaxLargeFills, DefaultMaxLargeFills)
	setDur(&l.FillTimeout, DefaultFillTimeout)
	setSize(&l.MaxRequestBody, DefaultMaxRequestBody)
	setDur(&l.ReadTimeout, DefaultClientRead)
	setDur(&l.WriteTimeout, DefaultClientWrite)
	setDur(&l.IdleTimeout, DefaultClientIdle)
	setDur(&l.ShutdownTimeout, DefaultShutdownTimeout)
}

func setStr(p *string, v string) {
	if *p == "" {
		*p = v
	}
}

func setInt(p *int, v int) {
	if *p == 0 {
		*p = v
	}
}

func setSize(p *Size, v int64) {
	if *p == 0 {
		*p = Size(v)
	}
}

func setDur(p *Duration, v time.Duration) {
	if *p == 0 {
		*p = Duration(v)
	}
}

// PromoteEnabled reports Cache.Promote, true when unset.
func (c *Cache) PromoteEnabled() bool { return c.Promote == nil || *c.Promote }

// nilIfEmpty makes "[]" and an absent list the same Config.
func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

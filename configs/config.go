package configs

import "fmt"

// Config is the whole of strata's configuration. The YAML key of each
// field is in its tag; each field's comment gives its default (filled by
// EnsureDefaults when the field is zero).
type Config struct {
	Listen      string   `yaml:"listen"`       // client listener; default ":8080"
	AdminListen string   `yaml:"admin_listen"` // metrics, health, purge; default "127.0.0.1:9090"
	TLS         TLS      `yaml:"tls"`          // optional HTTPS listener for clients
	Origins     []Origin `yaml:"origins"`      // at least one
	Cache       Cache    `yaml:"cache"`
	Key         Key      `yaml:"key"`
	HTTP        HTTP     `yaml:"http"`
	Limits      Limits   `yaml:"limits"`
	Admin       Admin    `yaml:"admin"`
	Cluster     Cluster  `yaml:"cluster"` // peers and CDN-Loop (cluster.go)
	Log         Log      `yaml:"log"`

	AccessLog AccessLog `yaml:"access_log"` // one line per request (accesslog.go)
	Edge      Edge      `yaml:"edge"`       // compression at the edge (edge.go)

	cgroupLimit int64 // the memory cgroup's limit (Overrides.CgroupLimit); 0: none
}

// TLS is the optional HTTPS listener. It is on when Listen is set, and
// then CertFile and KeyFile (PEM) are required.
type TLS struct {
	Listen   string `yaml:"listen,omitempty"` // e.g. ":8443"; default off
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
}

// Host header modes of an origin.
const (
	HostPreserve = "preserve" // send the client's Host (Varnish's default)
	HostOrigin   = "origin"   // send the origin URL's host (object stores need it)
)

// Origin is one upstream. A request goes to the origin whose Hosts match
// its Host header, else to the default origin, else it is refused.
type Origin struct {
	Name       string         `yaml:"name"`              // default: the URL's host; unique
	URL        string         `yaml:"url"`               // http:// or https://, no path, query or user info
	Hosts      []string       `yaml:"hosts,omitempty"`   // Host values routed here; "*.example.com" matches subdomains
	Default    bool           `yaml:"default,omitempty"` // at most one; a lone origin is the default
	HostHeader string         `yaml:"host_header"`       // preserve | origin; default preserve
	CAFile     string         `yaml:"ca_file,omitempty"` // extra PEM roots for an https origin; verification stays on
	Timeouts   OriginTimeouts `yaml:"timeouts"`
	MaxConns   int            `yaml:"max_conns"` // connections to this origin; default 512
	// Status line and header block of a response; larger: 502 (kind
	// header_too_large), not retried. Each origin request in flight holds a
	// read buffer this size. Default 64KiB.
	MaxHeaderBytes Size `yaml:"max_header_bytes"`
	// S3 makes the origin a private S3-compatible bucket (s3.go).
	S3 *S3 `yaml:"s3,omitempty"`
}

// OriginTimeouts bound the stages of an origin fetch. An elapsed connect
// or read timeout answers 504.
type OriginTimeouts struct {
	Connect Duration `yaml:"connect"` // TCP (and TLS) connect; default 5s
	Read    Duration `yaml:"read"`    // stall: the longest wait for the next bytes of a response; default 30s
	Idle    Duration `yaml:"idle"`    // idle keep-alive connection lifetime; default 90s
}

// Cache configures the hybrid cache.
type Cache struct {
	Memory        Memory `yaml:"memory"`
	Disk          Disk   `yaml:"disk"`
	WritePolicy   string `yaml:"write_policy"`    // eviction | insertion; default eviction
	Promote       *bool  `yaml:"promote"`         // copy disk hits into memory; default true
	Promotion     string `yaml:"promotion"`       // when: second-hit | first-hit | never; default second-hit
	SliceSize     Size   `yaml:"slice_size"`      // bodies larger than this are stored in slices; default 1MiB
	MaxObjectSize Size   `yaml:"max_object_size"` // larger bodies pass through uncached; default 256MiB
	// After a clean stop, the memory tier's keys are read back from disk
	// in the background: at most WarmBytes, at WarmRate bytes a second.
	WarmBytes Size `yaml:"warm_bytes"` // default three quarters of memory.capacity
	WarmRate  Size `yaml:"warm_rate"`  // bytes per second; default 64MiB
	ReadAhead int  `yaml:"read_ahead"` // slices fetched ahead of a sequential reader; default 4; -1: none
}

// Memory is the memory tier.
type Memory struct {
	Capacity Size   `yaml:"capacity"` // bytes of keys, headers and bodies; default 256MiB
	Policy   string `yaml:"policy"`   // s3fifo | lru | fifo; default s3fifo
}

// Disk is the disk tier. It is off when Path is empty and Devices too.
// Path and Size are the one-device form; Devices lists several (one
// engine each, keys spread over them by hash), and the two forms exclude
// each other. Every other key applies to each device alike.
type Disk struct {
	Path         string    `yaml:"path"`              // block device or file; empty: memory only
	Size         Size      `yaml:"size"`              // bytes to use; 0: the whole device (a file needs a size)
	Devices      []Device  `yaml:"devices,omitempty"` // several devices, instead of path and size
	RegionSize   Size      `yaml:"region_size"`       // unit of writing and eviction; default 16MiB
	Flushers     int       `yaml:"flushers"`          // default 2
	Reclaimers   int       `yaml:"reclaimers"`        // default 1
	BufferSize   Size      `yaml:"buffer_size"`       // each flusher's write buffer (two each); default 4MiB
	Admission    Admission `yaml:"admission"`
	Runtime      string    `yaml:"runtime"`       // disabled | unified | separated | uring; default uring
	ReadWorkers  int       `yaml:"read_workers"`  // default 8
	WriteWorkers int       `yaml:"write_workers"` // default 2
	Recovery     string    `yaml:"recovery"`      // none | quiet | strict; default quiet
	// A read past ReadTimeout is a miss; ErrorLimit failed reads, writes
	// and read timeouts within ErrorWindow take the disk out of service
	// until a probe (every ProbeInterval, backing off) answers.
	ReadTimeout   Duration `yaml:"read_timeout"`   // default 250ms; applies with a read pool (not runtime disabled)
	ErrorLimit    int      `yaml:"error_limit"`    // default 10; -1: never out of service
	ErrorWindow   Duration `yaml:"error_window"`   // default 10s
	ProbeInterval Duration `yaml:"probe_interval"` // default 2s, doubling up to 30s
}

// Device is one entry of cache.disk.devices.
type Device struct {
	Path string `yaml:"path"` // block device or file
	Size Size   `yaml:"size"` // bytes to use; 0: the whole device (a file needs a size)
}

// List returns the disk tier's devices: Devices, or Path and Size as one
// device, or none (memory only).
func (d *Disk) List() []Device {
	if len(d.Devices) > 0 {
		return d.Devices
	}
	if d.Path != "" {
		return []Device{{Path: d.Path, Size: d.Size}}
	}
	return nil
}

// deviceField names the config key of the i-th of List's devices, plus
// sub (".size", ".path" or "").
func (d *Disk) deviceField(i int, sub string) string {
	if len(d.Devices) == 0 {
		if sub == "" {
			return "cache.disk"
		}
		return "cache.disk" + sub
	}
	return fmt.Sprintf("cache.disk.devices[%d]%s", i, sub)
}

// Admission decides what reaches the disk. Rate caps the steady state;
// a device with write bandwidth to spare fills past it, as fast as its
// flushers write, within an endurance budget of DriveWritesPerDay of the
// disk tier's size a day, a week's worth held, a day's plus one fill of
// the disk granted at start (admission.Filler).
type Admission struct {
	Rate              Rate    `yaml:"rate"`                 // steady-state disk write budget; default 64MiB/s
	Burst             Size    `yaml:"burst"`                // token bucket depth; default 2 × region size
	MinFrequency      int     `yaml:"min_frequency"`        // accesses before admission; default 0 (off)
	DriveWritesPerDay float64 `yaml:"drive_writes_per_day"` // endurance budget of filling past rate; default 1; -1: never past rate
}

// Key shapes the cache key (scheme, host, path and query by default).
type Key struct {
	IgnoreQuery    bool     `yaml:"ignore_query,omitempty"`    // drop the whole query
	SortQuery      bool     `yaml:"sort_query,omitempty"`      // order parameters, so ?a=1&b=2 == ?b=2&a=1
	IgnoreParams   []string `yaml:"ignore_params,omitempty"`   // drop these parameters (utm_source, ...)
	IncludeHeaders []string `yaml:"include_headers,omitempty"` // add these request headers' values
}

// HTTP tunes RFC 9111 behaviour.
type HTTP struct {
	DefaultTTL        Duration `yaml:"default_ttl"`        // freshness of cacheable responses without any; default 0 (not stored)
	HeuristicFraction float64  `yaml:"heuristic_fraction"` // of the Last-Modified age; default 0.1
	HeuristicMax      Duration `yaml:"heuristic_max"`      // cap on heuristic freshness; default 24h
	StoreSetCookie    bool     `yaml:"store_set_cookie"`   // store responses with Set-Cookie; default false
	Grace             Duration `yaml:"grace"`              // serve stale this long when the origin fails; default 0
	MaxVariants       int      `yaml:"max_variants"`       // stored Vary variants per URL; default 16
	// Surrogate-Control (W3C Edge Architecture): obeyed by default for
	// directives addressed to surrogate_token or to every surrogate.
	IgnoreSurrogateControl bool   `yaml:"ignore_surrogate_control"` // default false
	SurrogateToken         string `yaml:"surrogate_token"`          // default "strata"
	// Targeted cache control (RFC 9213): the field addressed to strata
	// alone beats CDN-Cache-Control, which beats Cache-Control and Expires.
	TargetedCacheControl  string `yaml:"targeted_cache_control"`   // field name; default Strata-Cache-Control
	IgnoreCDNCacheControl bool   `yaml:"ignore_cdn_cache_control"` // default false: CDN-Cache-Control obeyed
}

// Limits bound what clients may cost.
type Limits struct {
	// Memory bounds strata's resident memory; every pool and queue is
	// sized from it (see Budget). Default 0: the memory cgroup's limit less
	// a tenth, else the memory tier plus what the other parts need.
	Memory          Size     `yaml:"memory"`
	MaxHeaderBytes  Size     `yaml:"max_header_bytes"` // request line and headers; over it: 431; default 16KiB
	MaxConns        int      `yaml:"max_conns"`        // client connections; default 10000
	MaxFills        int      `yaml:"max_fills"`        // concurrent shared origin fills; beyond: passed through; default 1024, lowered to fit Memory
	MaxLargeFills   int      `yaml:"max_large_fills"`  // of them, fills of bodies over 64KiB; beyond: streamed unstored; default 64, lowered to fit Memory
	FillTimeout     Duration `yaml:"fill_timeout"`     // a whole origin fill, however steady; past it: cut, not stored; default 10m
	MaxRequestBody  Size     `yaml:"max_request_body"` // bodies passed to the origin; default 16MiB
	ReadTimeout     Duration `yaml:"read_timeout"`     // reading a request; default 30s
	WriteTimeout    Duration `yaml:"write_timeout"`    // writing a response, whole; default 10m
	IdleTimeout     Duration `yaml:"idle_timeout"`     // idle keep-alive connection; default 60s
	ShutdownTimeout Duration `yaml:"shutdown_timeout"` // drain, flush and close on SIGTERM, in all; default 30s
}

// Admin protects the admin listener's purge endpoint. Purge is off when
// neither is set; metrics and health need no token.
type Admin struct {
	PurgeToken     string `yaml:"purge_token,omitempty"`      // bearer token
	PurgeTokenFile string `yaml:"purge_token_file,omitempty"` // a file holding it (not both)
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error; default info
	Format string `yaml:"format"` // text | json; default text
}

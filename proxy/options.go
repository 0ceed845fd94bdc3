package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"strata/proxy/internal/httpcache"
)

// Host header modes of OriginOptions.HostHeader.
const (
	// HostPreserve sends the client's Host to the origin (web applications).
	HostPreserve = "preserve"
	// HostOrigin sends the origin's own host (object stores, virtual hosts).
	HostOrigin = "origin"
)

// PolicyOptions configure the HTTP caching rules (RFC 9111); see
// httpcache.PolicyOptions for each field and its default.
type PolicyOptions = httpcache.PolicyOptions

// KeyOptions shape the primary cache key; see httpcache.KeyOptions.
type KeyOptions = httpcache.KeyOptions

// OriginOptions describe one origin server.
type OriginOptions struct {
	// URL is the origin's base, http:// or https:// host[:port]; a path is
	// not allowed. Required.
	URL string
	// Hosts are the request Host values (without port, case-insensitive)
	// routed to this origin.
	Hosts []string
	// Default marks the origin used when no Hosts entry matches. At most one.
	Default bool
	// HostHeader is HostPreserve (default) or HostOrigin.
	HostHeader string
	// CAFile is a PEM file of extra roots trusted for an https origin, on
	// top of the system roots. Verification is always on.
	CAFile string
	// ConnectTimeout bounds dialling (and the TLS handshake). Default 5s.
	ConnectTimeout time.Duration
	// ResponseTimeout is the longest wait for the response headers and for
	// each read of the body, so a stall timeout between bytes (see
	// progressConn): an origin silent that long gets 504 (before headers)
	// or a cut connection (mid-body), counted as a timeout. An origin that
	// keeps sending, however slowly, is bounded by Options.FillTimeout
	// only. Default 30s.
	ResponseTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle that long. Default 90s.
	IdleTimeout time.Duration
	// MaxConns bounds connections to this origin. Default 512.
	MaxConns int
	// MaxHeaderBytes bounds the status line and header block of the
	// origin's responses (with its 1xx responses before it); a larger one
	// is answered 502 (ErrOriginHeaderTooLarge) and not retried. It is the
	// size of the read buffer each origin request holds while its response
	// streams. Default 64 KiB (fasthttp's own 4 KiB refused large CSP,
	// cookie and object-store metadata headers); 4 KiB..1 MiB.
	MaxHeaderBytes int
	// S3, when set, makes the origin an S3-compatible bucket at URL (the
	// endpoint): requests are signed, S3's errors handled (origin_s3.go).
	S3 *S3Options
}

// Options configure a Server. The zero value plus one origin works after
// EnsureDefaults.
type Options struct {
	// Origins to proxy to. At least one; exactly one may be Default (a
	// single origin is the default by itself).
	Origins []OriginOptions
	// Policy is the RFC 9111 policy. Shared is forced on: strata is a
	// shared cache.
	Policy PolicyOptions
	// Key configures the cache key.
	Key KeyOptions
	// SliceSize is the size of the body slices large objects are stored
	// in; bodies up to it are stored inline with the metadata. Must fit a
	// store entry (a disk region). Default 1 MiB; 4 KiB..16 MiB.
	SliceSize int
	// MaxObjectSize: bodies larger than this are streamed through and not
	// stored. Default 256 MiB.
	MaxObjectSize int64
	// FillWindow is how many slices a fill keeps in memory for readers
	// that have not yet caught up. Default 4; at least 2.
	FillWindow int
	// MaxFills bounds concurrent shared fills; further misses stream from
	// the origin uncached. Default 1024. A fill's buffers grow only with
	// bytes that arrived, so a small object costs about its size; large
	// bodies are bounded apart by MaxLargeFills. (64 made a busy edge pass
	// most concurrent misses through uncached: the conformance suite runs
	// 100 tests at once.)
	MaxFills int
	// MaxLargeFills bounds the shared fills of large bodies (a declared
	// length over 64 KiB, or none): each may hold FillWindow slices, so
	// these dominate fill memory, which stays under MaxLargeFills ×
	// FillWindow × SliceSize + MaxFills × 64 KiB. A large response beyond
	// it is streamed to its client unshared and not stored. Default 64.
	MaxLargeFills int
	// ReadAhead is how many slices past the one a sequential reader of a
	// sliced object reads are fetched ahead of it (readahead.go). Default
	// 4; negative: none.
	ReadAhead int
	// MaxStreamBytes bounds the buffers of responses served from stored
	// sliced bodies: each holds the slices it reads before its status line
	// (at most FillWindow; see sliceSource) and, when its body has more,
	// one slice buffer while it streams. A response that finds no room
	// waits up to StreamWait, then streams anyway (the bound is soft;
	// counted in strata_stream_budget_overruns_total); a read-ahead that
	// finds no room is skipped. Default 256 MiB (configs sizes it from
	// limits.memory).
	MaxStreamBytes int64
	// StreamWait is how long a response waits for MaxStreamBytes room.
	// Default 1s.
	StreamWait time.Duration
	// MaxVariants bounds the variants (responses with Vary, one per
	// secondary key) stored per URL; storing one more evicts the oldest.
	// Default 16; 1..1024.
	MaxVariants int
	// RevalidateKeep is how long a stored response with a validator (ETag
	// or Last-Modified) stays in the store past its freshness lifetime and
	// stale windows, to be revalidated with a conditional request (a 304
	// refreshes it without the body) rather than fetched again (Varnish's
	// keep). Default 1h; negative: none.
	RevalidateKeep time.Duration
	// StaleIfUnreachable: when the origin cannot be reached (connection
	// error, timeout) a stored response stale by at most this long is
	// served instead of 502/504, as RFC 9111 §4.2.4 lets a disconnected
	// cache do, unless must-revalidate, proxy-revalidate, s-maxage or
	// no-cache forbid it. Default 1h; negative: never (then only
	// stale-if-error and Policy.Grace apply).
	StaleIfUnreachable time.Duration
	// FillTimeout bounds a whole fill or slice fetch, headers and body,
	// however steadily the origin sends (ResponseTimeout bounds each wait
	// between bytes): past it the fill stops, its readers' connections are
	// cut, nothing is stored, and it counts as an origin timeout. A pass
	// (uncached) response is bounded by the client's WriteTimeout instead.
	// Default 10m.
	FillTimeout time.Duration
	// FillLagWait is how long a stored fill holds back for a reader that
	// has fallen a window behind before it lets that reader go on alone
	// (reading slices back from the store, which may have dropped them).
	// A reader slower than the origin thus slows the fill for at most this
	// long, once. Default 5s.
	FillLagWait time.Duration
	// MaxHeaderBytes bounds a request's header; larger gets 431. Default 16 KiB.
	MaxHeaderBytes int
	// MaxRequestBodySize bounds request bodies (413 beyond). Default 16 MiB.
	MaxRequestBodySize int
	// MaxConns bounds client connections. Default 10000.
	MaxConns int
	// ReadTimeout and WriteTimeout bound client reads (a connection's first
	// request) and writes (a response, whole, from the handler's return).
	// Defaults 30s and 10m (large bodies take time); a negative WriteTimeout
	// is none. Client deadlines may fire up to min(timeout/8, 1s) late: they
	// are moved lazily, not on every request (deadlines.go).
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// ClientIdleTimeout closes client keep-alive connections that have not
	// sent their next request, whole, this long after a response. Default 60s.
	ClientIdleTimeout time.Duration
	// ViaName is the pseudonym in Via and Cache-Status. Default "strata".
	ViaName string
	// PurgeToken enables the admin POST /purge behind "Authorization:
	// Bearer <token>". Empty disables purge (403).
	PurgeToken string
	// Purge bounds and persists purges by tag and prefix.
	Purge PurgeOptions
	// Compress configures compression at the edge (compress.go).
	Compress CompressOptions
	// EarlyHints forwards an origin's 103 Early Hints to the client leading
	// a fill (early_hints.go). Default false: dropped, and Listener serves
	// connections unwrapped (a hit's one writev).
	EarlyHints bool
	// Loop configures CDN-Loop (RFC 8586) loop detection (loop.go).
	Loop LoopOptions
	// Peers are the other nodes of a fleet, which the admin listener
	// sends each purge on to (cluster_purge.go).
	Peers PeerOptions
	// Logger receives errors worth a look. Default: discard.
	Logger *slog.Logger
	// Registerer gets the proxy's metrics. Nil: no metrics.
	Registerer prometheus.Registerer
	// Now is the clock. Default time.Now. Tests inject one.
	Now func() time.Time
}

// Defaults of Options: a zero field means this value. They are the one
// home of each default; configs and configs/default.yaml use them (a test
// there checks that the file says the same).
const (
	DefaultSliceSize             = 1 << 20
	DefaultMaxObjectSize         = 256 << 20
	DefaultFillWindow            = 4
	DefaultMaxFills              = 1024
	DefaultMaxLargeFills         = 64
	DefaultReadAhead             = 4
	DefaultMaxStreamBytes        = 256 << 20
	DefaultStreamWait            = time.Second
	DefaultMaxVariants           = 16
	DefaultRevalidateKeep        = time.Hour
	DefaultStaleIfUnreachable    = time.Hour
	DefaultFillTimeout           = 10 * time.Minute
	DefaultFillLagWait           = 5 * time.Second
	DefaultMaxHeaderBytes        = 16 << 10
	DefaultMaxRequestBodySize    = 16 << 20
	DefaultMaxConns              = 10000
	DefaultReadTimeout           = 30 * time.Second
	DefaultWriteTimeout          = 10 * time.Minute
	DefaultClientIdleTimeout     = 60 * time.Second
	DefaultViaName               = "strata"
	DefaultOriginConnectTimeout  = 5 * time.Second
	DefaultOriginResponseTimeout = 30 * time.Second
	DefaultOriginIdleTimeout     = 90 * time.Second
	DefaultOriginMaxConns        = 512
	DefaultOriginMaxHeaderBytes  = 64 << 10
	// The HTTP policy's, from httpcache (which configs cannot import).
	DefaultHeuristicFraction = httpcache.DefaultHeuristicFraction
	DefaultHeuristicMax      = httpcache.DefaultHeuristicMax
	DefaultSurrogateToken    = httpcache.DefaultSurrogateToken
	DefaultTargetedField     = httpcache.DefaultTargetedField
)

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	o.Policy.EnsureDefaults()
	o.Policy.Shared = true
	setDefault(&o.SliceSize, DefaultSliceSize)
	setDefault(&o.MaxObjectSize, DefaultMaxObjectSize)
	setDefault(&o.FillWindow, DefaultFillWindow)
	setDefault(&o.MaxFills, DefaultMaxFills)
	setDefault(&o.MaxStreamBytes, DefaultMaxStreamBytes)
	setDefault(&o.StreamWait, DefaultStreamWait)
	setDefault(&o.MaxLargeFills, DefaultMaxLargeFills)
	setDefault(&o.ReadAhead, DefaultReadAhead)
	setDefault(&o.MaxVariants, DefaultMaxVariants)
	setDefault(&o.RevalidateKeep, DefaultRevalidateKeep)
	setDefault(&o.StaleIfUnreachable, DefaultStaleIfUnreachable)
	setDefault(&o.FillTimeout, DefaultFillTimeout)
	setDefault(&o.FillLagWait, DefaultFillLagWait)
	setDefault(&o.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setDefault(&o.MaxRequestBodySize, DefaultMaxRequestBodySize)
	setDefault(&o.MaxConns, DefaultMaxConns)
	setDefault(&o.ReadTimeout, DefaultReadTimeout)
	setDefault(&o.WriteTimeout, DefaultWriteTimeout)
	setDefault(&o.ClientIdleTimeout, DefaultClientIdleTimeout)
	setDefault(&o.ViaName, DefaultViaName)
	o.Purge.EnsureDefaults()
	o.Loop.EnsureDefaults()
	o.Compress.EnsureDefaults()
	o.Peers.EnsureDefaults()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	for i := range o.Origins {
		oo := &o.Origins[i]
		setDefault(&oo.HostHeader, HostPreserve)
		setDefault(&oo.ConnectTimeout, DefaultOriginConnectTimeout)
		setDefault(&oo.ResponseTimeout, DefaultOriginResponseTimeout)
		setDefault(&oo.IdleTimeout, DefaultOriginIdleTimeout)
		setDefault(&oo.MaxConns, DefaultOriginMaxConns)
		setDefault(&oo.MaxHeaderBytes, DefaultOriginMaxHeaderBytes)
		if oo.S3 != nil {
			s3o := *oo.S3 // the caller's stays as it was
			s3o.EnsureDefaults(o.Logger)
			oo.S3 = &s3o
		}
	}
	if len(o.Origins) == 1 {
		o.Origins[0].Default = true
	}
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate reports every problem, each wrapped in ErrInvalidOptions.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if err := o.Policy.Validate(); err != nil {
		bad("policy: %v", err)
	}
	if o.SliceSize < 4<<10 || o.SliceSize > 16<<20 {
		bad("slice_size %d not in [4KiB, 16MiB]", o.SliceSize)
	}
	if o.MaxObjectSize < 0 {
		bad("max_object_size %d < 0", o.MaxObjectSize)
	}
	if o.FillWindow < 2 {
		bad("fill_window %d < 2", o.FillWindow)
	}
	if o.MaxFills < 1 || o.MaxLargeFills < 1 || o.MaxHeaderBytes < 1024 || o.MaxRequestBodySize < 0 || o.MaxConns < 1 {
		bad("max_fills, max_large_fills, max_header_bytes (>=1024), max_request_body_size, max_conns must be positive")
	}
	if o.MaxVariants < 1 || o.MaxVariants > maxVariantsLimit {
		bad("max_variants %d not in [1, %d]", o.MaxVariants, maxVariantsLimit)
	}
	if o.FillTimeout < 0 || o.FillLagWait < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.ClientIdleTimeout < 0 {
		bad("timeouts must not be negative")
	}
	o.Compress.validate(bad)
	errs = append(errs, o.Purge.Validate(), o.Loop.Validate(), o.Peers.Validate())
	errs = append(errs, o.validateOrigins()...)
	return errors.Join(errs...)
}

func (o *Options) validateOrigins() []error {
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: origins[%d]: "+format, append([]any{ErrInvalidOptions, i}, args...)...))
	}
	if len(o.Origins) == 0 {
		errs = append(errs, fmt.Errorf("%w: no origins", ErrInvalidOptions))
	}
	defaults := 0
	for i, oo := range o.Origins {
		if oo.Default {
			defaults++
		}
		u, err := url.Parse(oo.URL)
		switch {
		case err != nil:
			bad(i, "url %q: %v", oo.URL, err)
		case u.Scheme != "http" && u.Scheme != "https":
			bad(i, "url %q: scheme must be http or https", oo.URL)
		case u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil:
			bad(i, "url %q: want scheme://host[:port] only", oo.URL)
		}
		if oo.HostHeader != HostPreserve && oo.HostHeader != HostOrigin {
			bad(i, "host_header %q: want %q or %q", oo.HostHeader, HostPreserve, HostOrigin)
		}
		if oo.ConnectTimeout <= 0 || oo.ResponseTimeout <= 0 || oo.IdleTimeout <= 0 || oo.MaxConns <= 0 {
			bad(i, "timeouts and max_conns must be positive")
		}
		if oo.MaxHeaderBytes < 4<<10 || oo.MaxHeaderBytes > 1<<20 {
			bad(i, "max_header_bytes %d not in [4KiB, 1MiB]", oo.MaxHeaderBytes)
		}
		if oo.CAFile != "" && (err != nil || u.Scheme != "https") {
			bad(i, "ca_file is for https origins")
		}
		if oo.S3 != nil {
			if err := oo.S3.Validate(); err != nil {
				bad(i, "%v", err)
			}
		}
	}
	if defaults > 1 {
		errs = append(errs, fmt.Errorf("%w: %d origins are default, at most one may be", ErrInvalidOptions, defaults))
	}
	return errs
}

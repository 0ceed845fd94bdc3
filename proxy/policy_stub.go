package proxy

// Stand-ins for the RFC 9111 policy functions that the "policy" branch
// writes (cachecontrol.go, freshness.go, age.go, cachekey.go). Same
// signatures, simple logic: max-age/s-maxage/Expires only. This file is
// deleted when that branch lands on main.

import (
	"bytes"
	"errors"
	"math"
	"time"

	"github.com/valyala/fasthttp"
)

// PolicyOptions configure the caching policy (stand-in).
type PolicyOptions struct {
	Shared            bool          `yaml:"shared"`
	HeuristicFraction float64       `yaml:"heuristic_fraction"`
	HeuristicMax      time.Duration `yaml:"heuristic_max"`
	DefaultTTL        time.Duration `yaml:"default_ttl"`
	StoreSetCookie    bool          `yaml:"store_set_cookie"`
	Grace             time.Duration `yaml:"grace"`
}

// EnsureDefaults fills zero fields.
func (o *PolicyOptions) EnsureDefaults() {}

// Validate reports bad values.
func (o *PolicyOptions) Validate() error {
	if o.HeuristicFraction < 0 || o.HeuristicFraction > 1 || o.DefaultTTL < 0 {
		return errors.New("proxy: policy: bad value")
	}
	return nil
}

// CacheControl holds parsed Cache-Control directives; -1 means absent.
type CacheControl struct {
	NoStore, NoCache, Private, Public, MustRevalidate, ProxyRevalidate, NoTransform, OnlyIfCached, Immutable, MaxStaleAny bool

	MaxAge, SMaxAge, MaxStale, MinFresh, StaleWhileRevalidate, StaleIfError int64
}

func (cc *CacheControl) parse(v []byte) {
	*cc = CacheControl{MaxAge: -1, SMaxAge: -1, MaxStale: -1, MinFresh: -1, StaleWhileRevalidate: -1, StaleIfError: -1}
	for len(v) > 0 {
		var d []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			d, v = v[:i], v[i+1:]
		} else {
			d, v = v, nil
		}
		d = bytes.TrimSpace(d)
		name, val := d, []byte(nil)
		if i := bytes.IndexByte(d, '='); i >= 0 {
			name, val = bytes.TrimSpace(d[:i]), bytes.Trim(bytes.TrimSpace(d[i+1:]), `"`)
		}
		n, ok := ParseAge(val)
		if !ok {
			n = -1
		}
		switch string(bytes.ToLower(name)) {
		case "no-store":
			cc.NoStore = true
		case "no-cache":
			cc.NoCache = true
		case "private":
			cc.Private = true
		case "public":
			cc.Public = true
		case "must-revalidate":
			cc.MustRevalidate = true
		case "only-if-cached":
			cc.OnlyIfCached = true
		case "max-age":
			cc.MaxAge = n
		case "s-maxage":
			cc.SMaxAge = n
		case "min-fresh":
			cc.MinFresh = n
		case "max-stale":
			cc.MaxStale, cc.MaxStaleAny = n, val == nil
		}
	}
}

// RequestPolicy is what a request allows.
type RequestPolicy struct {
	CC               CacheControl
	Cacheable        bool
	HasAuthorization bool
	Reason           string
}

// ParseRequest fills rp from the request header.
func ParseRequest(rp *RequestPolicy, h *fasthttp.RequestHeader) {
	rp.CC.parse(h.Peek("Cache-Control"))
	rp.HasAuthorization = len(h.Peek("Authorization")) > 0
	rp.Cacheable, rp.Reason = true, ""
	switch {
	case !h.IsGet() && !h.IsHead():
		rp.Cacheable, rp.Reason = false, "method"
	case rp.CC.NoStore:
		rp.Cacheable, rp.Reason = false, "request no-store"
	}
}

// StoreInfo is the storage decision for a response.
type StoreInfo struct {
	Store                              bool
	Reason                             string
	Lifetime                           time.Duration
	Heuristic                          bool
	Date, Expires, LastModified        time.Time
	ETag                               []byte
	CC                                 CacheControl
	StaleWhileRevalidate, StaleIfError time.Duration
	MustRevalidate                     bool
}

// StoreDecision decides whether and for how long a response may be stored.
func StoreDecision(si *StoreInfo, rp *RequestPolicy, status int, h *fasthttp.ResponseHeader, now time.Time, o *PolicyOptions) {
	*si = StoreInfo{}
	si.CC.parse(h.Peek("Cache-Control"))
	si.Date, _ = fasthttp.ParseHTTPDate(h.Peek("Date"))
	si.Expires, _ = fasthttp.ParseHTTPDate(h.Peek("Expires"))
	si.LastModified, _ = fasthttp.ParseHTTPDate(h.Peek("Last-Modified"))
	si.ETag = h.Peek("ETag")
	si.MustRevalidate = si.CC.MustRevalidate
	switch {
	case !rp.Cacheable:
		si.Reason = "request"
	case status != 200 && status != 203 && status != 204 && status != 301 && status != 404 && status != 410:
		si.Reason = "status"
	case si.CC.NoStore || rp.CC.NoStore:
		si.Reason = "no-store"
	case si.CC.Private && o.Shared:
		si.Reason = "private"
	case si.CC.NoCache:
		si.Reason = "no-cache"
	case len(h.Peek("Set-Cookie")) > 0 && !o.StoreSetCookie:
		si.Reason = "set-cookie"
	case rp.HasAuthorization && !si.CC.Public && si.CC.SMaxAge < 0 && !si.CC.MustRevalidate:
		si.Reason = "authorization"
	case si.CC.SMaxAge >= 0 && o.Shared:
		si.Store, si.Lifetime = true, time.Duration(si.CC.SMaxAge)*time.Second
	case si.CC.MaxAge >= 0:
		si.Store, si.Lifetime = true, time.Duration(si.CC.MaxAge)*time.Second
	case !si.Expires.IsZero():
		base := si.Date
		if base.IsZero() {
			base = now
		}
		si.Store, si.Lifetime = true, max(si.Expires.Sub(base), 0)
	case o.DefaultTTL > 0:
		si.Store, si.Lifetime, si.Heuristic = true, o.DefaultTTL, true
	default:
		si.Reason = "no freshness"
	}
}

// CurrentAge is RFC 9111 §4.2.3.
func CurrentAge(ageHeader int64, date, requestTime, responseTime, now time.Time) time.Duration {
	apparent := time.Duration(0)
	if !date.IsZero() {
		apparent = max(responseTime.Sub(date), 0)
	}
	delay := responseTime.Sub(requestTime)
	corrected := time.Duration(max(ageHeader, 0))*time.Second + delay
	return max(apparent, corrected) + now.Sub(responseTime)
}

// ParseAge parses a delta-seconds value, saturating at 2^31.
func ParseAge(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < math.MaxInt32 {
			n = n*10 + int64(c-'0')
		}
	}
	return min(n, 1<<31), true
}

// KeyOptions configure the cache key.
type KeyOptions struct {
	IgnoreQuery    bool     `yaml:"ignore_query"`
	SortQuery      bool     `yaml:"sort_query"`
	IgnoreParams   []string `yaml:"ignore_params"`
	IncludeHeaders []string `yaml:"include_headers"`
}

// BuildKey appends the cache key of req to dst.
func BuildKey(dst []byte, scheme []byte, req *fasthttp.Request, o *KeyOptions) []byte {
	dst = append(dst, scheme...)
	dst = append(dst, "://"...)
	for _, c := range req.Header.Host() {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	uri := req.Header.RequestURI()
	if o.IgnoreQuery {
		if i := bytes.IndexByte(uri, '?'); i >= 0 {
			uri = uri[:i]
		}
	}
	return append(dst, uri...)
}

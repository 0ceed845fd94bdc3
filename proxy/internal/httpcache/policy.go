package httpcache

import (
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"
)

// PolicyOptions configure the HTTP caching rules (RFC 9111).
//
// Shared defaults to true, which EnsureDefaults cannot do for a bool (it
// cannot tell an explicit false from an unset field): whoever owns the
// options sets it (proxy.Options.EnsureDefaults forces it on).
type PolicyOptions struct {
	// Shared: the cache is shared (s-maxage, private, proxy-revalidate and
	// the Authorization rule apply). Default true; a reverse proxy is one.
	Shared bool
	// HeuristicFraction of (Date - Last-Modified) used as the heuristic
	// freshness lifetime (RFC 9111 §4.2.2). Default (0) 0.1; negative
	// disables heuristic freshness from Last-Modified.
	HeuristicFraction float64
	// HeuristicMax caps a heuristic lifetime. Default (0) 24h.
	HeuristicMax time.Duration
	// DefaultTTL is the lifetime given to a heuristically cacheable
	// response (status 200, 404, ... or public) that has neither explicit
	// freshness nor Last-Modified, like nginx proxy_cache_valid. Default 0:
	// none (such a response is stored only when it has a validator).
	DefaultTTL time.Duration
	// StoreSetCookie stores responses carrying Set-Cookie. Default false.
	StoreSetCookie bool
	// Grace is a stale window (Varnish grace) used for responses that carry
	// neither stale-while-revalidate nor stale-if-error: within it a stale
	// response is served while being refreshed, or when the origin fails.
	// Never applies where must-revalidate, proxy-revalidate, s-maxage (in
	// a shared cache) or no-cache forbid stale serving. Default 0: none.
	Grace time.Duration
	// IgnoreSurrogateControl turns Surrogate-Control off (surrogate.go):
	// strata then neither obeys nor removes the field, nor sends
	// Surrogate-Capability. Default false: Surrogate-Control is obeyed.
	IgnoreSurrogateControl bool
	// SurrogateToken is strata's device token: Surrogate-Capability says
	// `<token>="Surrogate/1.0"`, and Surrogate-Control directives
	// targeted at it (";<token>") apply. It must be unique along a chain of
	// surrogates (an edge and a shield need different ones). Default
	// "strata". An HTTP token (RFC 9110 §5.6.2).
	SurrogateToken string
	// TargetedField names the response field addressed to strata alone
	// (RFC 9213 targeted cache control, targeted.go): it takes precedence
	// over CDN-Cache-Control and Cache-Control and is removed before the
	// response goes downstream. Default "Strata-Cache-Control". An HTTP
	// token, neither Cache-Control nor CDN-Cache-Control.
	TargetedField string
	// IgnoreCDNCacheControl leaves CDN-Cache-Control out of strata's
	// target list: it is then passed through and never obeyed. Default
	// false: obeyed (RFC 9213 §3).
	IgnoreCDNCacheControl bool

	surrogateCap []byte // `<token>="Surrogate/1.0"`, built by EnsureDefaults
}

// SurrogateCapability is the Surrogate-Capability value strata sends,
// `<token>="Surrogate/1.0"`, or nil before EnsureDefaults ran. Read-only.
func (o *PolicyOptions) SurrogateCapability() []byte { return o.surrogateCap }

// Defaults of PolicyOptions: a zero field means this value.
const (
	DefaultHeuristicFraction = 0.1
	DefaultHeuristicMax      = 24 * time.Hour
	DefaultSurrogateToken    = "strata"
)

// EnsureDefaults fills zero fields with their defaults (not Shared; see
// PolicyOptions).
func (o *PolicyOptions) EnsureDefaults() {
	if o.HeuristicFraction == 0 {
		o.HeuristicFraction = DefaultHeuristicFraction
	}
	if o.HeuristicMax == 0 {
		o.HeuristicMax = DefaultHeuristicMax
	}
	if o.SurrogateToken == "" {
		o.SurrogateToken = DefaultSurrogateToken
	}
	if o.TargetedField == "" {
		o.TargetedField = DefaultTargetedField
	}
	o.surrogateCap = append([]byte(o.SurrogateToken), `="Surrogate/1.0"`...)
}

// Validate reports every problem in o, wrapped in ErrPolicyOptions, or nil.
func (o *PolicyOptions) Validate() error {
	var errs []error
	if o.HeuristicFraction > 1 {
		errs = append(errs, fmt.Errorf("heuristic_fraction %v is over 1", o.HeuristicFraction))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"heuristic_max", o.HeuristicMax}, {"default_ttl", o.DefaultTTL}, {"grace", o.Grace}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", d.name, d.v))
		}
	}
	if !isToken([]byte(o.SurrogateToken)) {
		errs = append(errs, fmt.Errorf("surrogate_token %q is not an HTTP token", o.SurrogateToken))
	}
	tf := []byte(o.TargetedField)
	if !isToken(tf) || equalFold(tf, fasthttp.HeaderCacheControl) || equalFold(tf, HeaderCDNCacheControl) {
		errs = append(errs, fmt.Errorf("targeted_cache_control %q is not a field name of its own", o.TargetedField))
	}
	return policyJoin(errs)
}

func policyJoin(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrPolicyOptions, errors.Join(errs...))
}

// RequestPolicy is what a request says about caching, read once per
// request by ParseRequest. It holds no reference to the request.
type RequestPolicy struct {
	// CC: the request's Cache-Control lines merged; with no Cache-Control
	// line, Pragma: no-cache sets CC.NoCache (RFC 9111 §5.4).
	CC CacheControl
	// Cacheable: the request may be answered from the cache and its
	// response stored (subject to CC and StoreDecision): method GET or HEAD,
	// and no precondition only the origin may evaluate (If-Match,
	// If-Unmodified-Since: RFC 9111 §4.3.2). CC.NoStore forbids storing the
	// response but not answering from a stored one (§5.2.1.5).
	Cacheable bool
	// Head: the method is HEAD (answered from a stored GET; fetch GET).
	Head bool
	// HasAuthorization: the request carries Authorization; StoreDecision
	// applies §3.5.
	HasAuthorization bool
	// PragmaNoCache: CC.NoCache came from Pragma.
	PragmaNoCache bool
	// Conditional: If-None-Match or If-Modified-Since is present; see
	// NotModified.
	Conditional bool
	// HasRange: a Range field is present; see byterange.Parse and IfRange.
	HasRange bool
	// Reason says why Cacheable is false: "method" or "precondition".
	Reason string
}

// Reasons, in RequestPolicy.Reason and StoreInfo.Reason. They are short
// tokens fit for logs and a Cache-Status detail.
const (
	ReasonMethod         = "method"          // not GET/HEAD
	ReasonPrecondition   = "precondition"    // If-Match / If-Unmodified-Since
	ReasonStatus         = "status"          // 1xx, 304, or out of range
	ReasonMustUnderstand = "must-understand" // must-understand on a status we do not implement
	ReasonNoStore        = "no-store"        // request or response no-store
	ReasonPrivate        = "private"         // response private, shared cache
	ReasonAuthorization  = "authorization"   // §3.5
	ReasonSetCookie      = "set-cookie"      // PolicyOptions.StoreSetCookie off
	ReasonVaryStar       = "vary-star"       // Vary: *
	ReasonNoFreshness    = "no-freshness"    // nothing makes it storable (§3)
	ReasonNoValidator    = "no-validator"    // never reusable: always stale, no validator, no stale window
)

// ParseRequest fills rp from h. It does not allocate once h's internal
// buffers have grown (fasthttp reuses them). Like every function here that
// reads fasthttp headers, it looks fields up by their normalised names:
// headers must not have DisableNormalizing set.
func ParseRequest(rp *RequestPolicy, h *fasthttp.RequestHeader) {
	*rp = RequestPolicy{}
	rp.CC.reset()
	lines := h.PeekAll(fasthttp.HeaderCacheControl)
	for _, line := range lines {
		rp.CC.add(line)
	}
	if len(lines) == 0 {
		for _, line := range h.PeekAll(fasthttp.HeaderPragma) {
			if listHasToken(line, "no-cache") {
				rp.CC.NoCache = true
				rp.PragmaNoCache = true
			}
		}
	}
	rp.HasAuthorization = len(h.PeekAll(fasthttp.HeaderAuthorization)) > 0
	rp.Conditional = len(h.PeekAll(fasthttp.HeaderIfNoneMatch)) > 0 ||
		len(h.PeekAll(fasthttp.HeaderIfModifiedSince)) > 0
	rp.HasRange = len(h.PeekAll(fasthttp.HeaderRange)) > 0
	rp.Head = h.IsHead()
	switch {
	case !h.IsGet() && !rp.Head:
		rp.Reason = ReasonMethod
	case len(h.PeekAll(fasthttp.HeaderIfMatch)) > 0 || len(h.PeekAll(fasthttp.HeaderIfUnmodifiedSince)) > 0:
		rp.Reason = ReasonPrecondition
	default:
		rp.Cacheable = true
	}
}

// StoreInfo is StoreDecision's answer for one origin response.
//
// Lifetime: ETag borrows h's memory and is valid only until h is reset or
// released (fasthttp's Peek rule): copy it before keeping it. Everything
// else is values.
type StoreInfo struct {
	// Store: the response may be stored (RFC 9111 §3). For a 206 that
	// means its part may be stored as what it covers, never as the whole.
	Store bool
	// Reason says why not (one of the Reason* tokens), empty when stored.
	Reason string
	// FreshnessInfo (embedded) is what Evaluate needs later; keep it with
	// the stored object.
	FreshnessInfo
	// Heuristic: Lifetime came from Last-Modified or DefaultTTL, not from
	// explicit freshness.
	Heuristic bool
	// Date is the Date field, or now when it is absent or invalid; then
	// DateMissing is set and a Date field must be added to the stored and
	// forwarded response (RFC 9110 §6.6.1).
	Date        time.Time
	DateMissing bool
	// Expires is the Expires field (zero when absent; when invalid, a time
	// in the past as §5.3 requires). LastModified is zero when absent or
	// invalid.
	Expires, LastModified time.Time
	// Age is the Age field in seconds (ResponseAge), 0 when absent.
	Age int64
	// ETag is the first ETag field, borrowed from h (see above).
	ETag []byte
	// CC is the response's caching policy for strata: the targeted field
	// Targeted names (targeted.go), else Cache-Control, all lines merged.
	CC CacheControl
	// Targeted says where CC came from; with a targeted field, Expires was
	// ignored (Expires is then zero).
	Targeted Targeted
	// Surrogate is what the response's Surrogate-Control says to strata
	// (surrogate.go); MaxAge -1 when nothing, or when IgnoreSurrogateControl.
	Surrogate SurrogateControl
	// MayVary is false when the header has no Vary field, and
	// MaySurrogate false when it has neither Surrogate-Control nor the
	// targeted field: the caller skips looking them up or deleting them,
	// a walk over every field each. Both may be true for a header that
	// lacks them (one whose fields were looked up, not walked: respFields).
	MayVary, MaySurrogate bool
}

// StoreDecision decides whether the response to the request rp, with
// status and headers h, received at now, may be stored, and computes its
// freshness (RFC 9111 §3, §4.2.1, §4.2.2). Refusals, in order:
//   - the request is not Cacheable (method, origin-only precondition);
//   - status 1xx, 304 (it updates, §4.3.4) or outside 100..999;
//   - must-understand with a status strata does not implement (with one
//     it does, must-understand overrides no-store, §5.2.2.3);
//   - no-store in the request or the response;
//   - private, in a shared cache;
//   - Authorization in the request, in a shared cache, unless the response
//     has public, s-maxage or must-revalidate (§3.5);
//   - Set-Cookie, unless PolicyOptions.StoreSetCookie;
//   - Vary: * (such a response can never be reused, §4.1);
//   - nothing makes it storable: no max-age, no s-maxage (shared), no
//     Expires, not public, and a status that is not heuristically cacheable
//     (§3, §4.2.2);
//   - it could never be reused: its lifetime is 0 (or no-cache), it has no
//     validator (ETag, Last-Modified) and no stale window can open.
//
// The policy comes from the first valid targeted field on strata's target
// list (TargetedField, CDN-Cache-Control: targeted.go), which replaces
// Cache-Control and Expires, else from Cache-Control and Expires.
// An applicable Surrogate-Control (surrogate.go) comes first: its no-store
// refuses, its max-age sets the lifetime and sets aside Cache-Control's
// no-store, no-cache and private and the "nothing makes it storable" rule.
//
// no-cache responses are stored (when they have a validator) with
// FreshnessInfo.NoCache: each use revalidates. It does not allocate.
//
// REQUIRES: h answers a GET sent to the origin. For a client HEAD
// (rp.Head) the caller fetches with GET, or stores nothing: a response to
// a HEAD has no body to store. For a 304 that freshens a stored response,
// run it on the stored headers updated from the 304 (§4.3.4, §3.2: every
// field but Content-Length and the hop-by-hop ones), with the stored
// status.

func StoreDecision(si *StoreInfo, rp *RequestPolicy, status int, h *fasthttp.ResponseHeader, now time.Time, o *PolicyOptions) {
	var f respFields
	f.gather(h, o)
	storeDecide(si, rp, status, &f, now, o)
}

// storeDecide is StoreDecision on the fields f gathered.
func storeDecide(si *StoreInfo, rp *RequestPolicy, status int, f *respFields, now time.Time, o *PolicyOptions) {
	*si = StoreInfo{}
	si.CC.reset()
	if si.Targeted = readTargeted(&si.CC, f, o); si.Targeted == TargetedNone {
		for _, line := range f.lines(&f.cc, fasthttp.HeaderCacheControl) {
			si.CC.add(line)
		}
	}
	si.Surrogate.reset()
	if !o.IgnoreSurrogateControl {
		readSurrogateControl(&si.Surrogate, f.lines(&f.surrogate, surrogateControl), o.SurrogateToken)
	}
	storeReadHeaders(si, f, now)
	storeFreshness(si, status, f, o)
	applySurrogate(si)
	si.Reason = storeRefusal(si, rp, status, f, o)
	si.Store = si.Reason == ""
	si.MayVary = f.peek || f.vary.n > 0
	si.MaySurrogate = f.peek || f.surrogate.n > 0 || f.own.n > 0
}

// storeReadHeaders fills the dates, Age and ETag.
func storeReadHeaders(si *StoreInfo, f *respFields, now time.Time) {
	si.Date, si.DateMissing = now, true
	if d, ok := ParseDate(f.value(f.date, fasthttp.HeaderDate)); ok {
		si.Date, si.DateMissing = d, false
	}
	if lm, ok := ParseDate(f.value(f.lastModified, fasthttp.HeaderLastModified)); ok {
		si.LastModified = lm
	}
	si.Age = responseAge(f.lines(&f.age, fasthttp.HeaderAge))
	si.ETag = f.value(f.etag, fasthttp.HeaderETag)
}

// storeRefusal returns the Reason the response may not be stored, or "".
func storeRefusal(si *StoreInfo, rp *RequestPolicy, status int, f *respFields, o *PolicyOptions) string {
	cc := &si.CC
	shared := o.Shared
	sc := si.surrogateOverrides()
	switch {
	case !rp.Cacheable:
		return rp.Reason
	case status < 200 || status > 999 || status == fasthttp.StatusNotModified:
		return ReasonStatus
	case cc.MustUnderstand && !understoodStatus(status):
		return ReasonMustUnderstand
	case rp.CC.NoStore || si.Surrogate.NoStore || (cc.NoStore && !cc.MustUnderstand && !sc):
		return ReasonNoStore
	case shared && cc.Private && !sc:
		return ReasonPrivate
	case shared && rp.HasAuthorization && !cc.Public && cc.SMaxAge < 0 && !cc.MustRevalidate:
		return ReasonAuthorization
	case !o.StoreSetCookie && f.hasSetCookie():
		return ReasonSetCookie
	case storeVaryStar(f.lines(&f.vary, fasthttp.HeaderVary)):
		return ReasonVaryStar
	case !sc && !storeAllowed(si, status, shared):
		return ReasonNoFreshness
	case !storeReusable(si, o):
		return ReasonNoValidator
	}
	return ""
}

func storeVaryStar(lines [][]byte) bool {
	for _, line := range lines {
		if varyStar(line) {
			return true
		}
	}
	return false
}

// storeAllowed is the last condition of §3: something allows storing.
func storeAllowed(si *StoreInfo, status int, shared bool) bool {
	cc := &si.CC
	return cc.MaxAge >= 0 || (shared && cc.SMaxAge >= 0) || !si.Expires.IsZero() ||
		cc.Public || (!shared && cc.Private) || heuristicStatus(status)
}

// storeReusable: a stored response is worth keeping only if some future
// request could use it: it can be fresh, validated, or served stale.
func storeReusable(si *StoreInfo, o *PolicyOptions) bool {
	if si.Lifetime > 0 && !si.NoCache {
		return true
	}
	if len(si.ETag) > 0 || !si.LastModified.IsZero() {
		return true
	}
	if si.NoCache || si.MustRevalidate {
		return false
	}
	return si.StaleWhileRevalidate > 0 || si.StaleIfError > 0 || o.Grace > 0
}

// Invalidates reports whether a response with status to a request with
// method must invalidate the stored responses for the target URI (and the
// same-origin Location and Content-Location URIs, which the caller checks):
// RFC 9111 §4.4, an unsafe method (RFC 9110 §9.2.1: anything but GET,
// HEAD, OPTIONS and TRACE) answered with a non-error status (2xx, 3xx).
func Invalidates(method []byte, status int) bool {
	switch string(method) {
	case fasthttp.MethodGet, fasthttp.MethodHead, fasthttp.MethodOptions, fasthttp.MethodTrace:
		return false
	}
	return status >= 200 && status < 400
}

package httpcache

import (
	"time"

	"github.com/valyala/fasthttp"
)

// FreshnessInfo is what serving a stored response needs to know about its
// freshness: small, fixed-size and pointer-free, so the server can keep it
// in an object's metadata (and on disk) and hand it to Evaluate on a hit.
// StoreDecision fills it; a 304 that freshens a stored response (RFC 9111
// §4.3.4) refills it by running StoreDecision on the merged headers.
type FreshnessInfo struct {
	// Lifetime is the freshness lifetime (§4.2.1): s-maxage (shared),
	// max-age, Expires - Date, a heuristic, or PolicyOptions.DefaultTTL.
	Lifetime time.Duration
	// StaleWhileRevalidate and StaleIfError are the RFC 5861 windows;
	// negative when the response did not carry the directive.
	StaleWhileRevalidate time.Duration
	StaleIfError         time.Duration
	// MustRevalidate: once stale, never served without successful
	// validation (must-revalidate; in a shared cache also proxy-revalidate
	// and s-maxage, §5.2.2.8, §5.2.2.10). On a failed validation the
	// answer is 504 (§5.2.2.2).
	MustRevalidate bool
	// NoCache: every use needs successful validation, fresh or not
	// (§5.2.2.4), and nothing stale is ever served.
	NoCache bool
}

// Freshness is Evaluate's verdict on using a stored response.
type Freshness uint8

const (
	// Fresh: serve the stored response.
	Fresh Freshness = iota
	// StaleServable: stale, but the request's max-stale accepts it
	// (RFC 9111 §5.2.1.2): serve it.
	StaleServable
	// StaleRevalidate: stale within stale-while-revalidate (RFC 5861 §3) or
	// the configured grace: serve it now and refresh it once in the
	// background.
	StaleRevalidate
	// MustValidate: forward to the origin before serving (a conditional
	// request when the stored response has validators, §4.3.1). With
	// only-if-cached in the request the answer is 504 instead (§5.2.1.7).
	MustValidate
)

// String names the verdict, for logs and tests.
func (f Freshness) String() string {
	switch f {
	case Fresh:
		return "fresh"
	case StaleServable:
		return "stale-servable"
	case StaleRevalidate:
		return "stale-while-revalidate"
	case MustValidate:
		return "must-validate"
	}
	return "invalid"
}

// Verdict is what Evaluate decides.
type Verdict struct {
	Freshness Freshness
	// ServeOnError: if the forward to the origin fails (connection error,
	// timeout, or a 500, 502, 503 or 504 answer), the stored response may
	// be served instead: it is still fresh, or stale within stale-if-error
	// (response or request directive, RFC 5861 §4) or the grace, and
	// nothing forbids it.
	ServeOnError bool
	// Staleness is age - lifetime: negative while fresh.
	Staleness time.Duration
}

// Evaluate decides how a stored response with freshness fi and current age
// age (CurrentAge) may answer a request rp (RFC 9111 §4.2, §4.2.4, §5.2.1,
// RFC 5861). The rules, in order:
//   - response no-cache, or request no-cache (or Pragma): MustValidate;
//   - request max-age exceeded (age > max-age): MustValidate;
//   - fresh (age < lifetime): Fresh, unless request min-fresh asks for more
//     remaining lifetime than is left: MustValidate;
//   - stale and must-revalidate (incl. proxy-revalidate, s-maxage when
//     shared): MustValidate, never anything stale;
//   - stale within the request's max-stale: StaleServable;
//   - stale within stale-while-revalidate, or within the grace when the
//     response carried neither RFC 5861 directive: StaleRevalidate;
//   - otherwise MustValidate.
//
// ServeOnError is set when the stored response is not forbidden from use
// (no no-cache either side) and is fresh, or stale within stale-if-error
// (or grace) and not must-revalidate. Evaluate does not allocate.
func Evaluate(fi *FreshnessInfo, age time.Duration, rp *RequestPolicy, o *PolicyOptions) Verdict {
	v := Verdict{Staleness: age - fi.Lifetime}
	fresh := age < fi.Lifetime
	v.ServeOnError = serveOnError(fi, v.Staleness, fresh, rp, o)
	switch {
	case fi.NoCache || rp.CC.NoCache:
		v.Freshness = MustValidate
	case rp.CC.MaxAge >= 0 && age > Seconds(rp.CC.MaxAge):
		v.Freshness = MustValidate
	case fresh:
		if rp.CC.MinFresh >= 0 && fi.Lifetime-age < Seconds(rp.CC.MinFresh) {
			v.Freshness = MustValidate
		}
	case fi.MustRevalidate:
		v.Freshness = MustValidate
	case rp.CC.MaxStaleAny || (rp.CC.MaxStale >= 0 && v.Staleness <= Seconds(rp.CC.MaxStale)):
		v.Freshness = StaleServable
	case withinWindow(v.Staleness, swrWindow(fi, o)):
		v.Freshness = StaleRevalidate
	default:
		v.Freshness = MustValidate
	}
	return v
}

func serveOnError(fi *FreshnessInfo, staleness time.Duration, fresh bool, rp *RequestPolicy, o *PolicyOptions) bool {
	if fi.NoCache || rp.CC.NoCache {
		return false
	}
	if fresh {
		return true
	}
	if fi.MustRevalidate {
		return false
	}
	w := fi.StaleIfError
	if rp.CC.StaleIfError >= 0 {
		w = max(w, Seconds(rp.CC.StaleIfError))
	}
	if w < 0 && fi.StaleWhileRevalidate < 0 && o.Grace > 0 {
		w = o.Grace
	}
	return withinWindow(staleness, w)
}

// swrWindow is the stale-while-revalidate window, or the grace when the
// response carried neither RFC 5861 directive; negative means none.
func swrWindow(fi *FreshnessInfo, o *PolicyOptions) time.Duration {
	if fi.StaleWhileRevalidate >= 0 {
		return fi.StaleWhileRevalidate
	}
	if fi.StaleIfError < 0 && o.Grace > 0 {
		return o.Grace
	}
	return -1
}

// withinWindow: a stale response (staleness >= 0) is inside a window of
// w >= 0, inclusive. A zero window admits nothing stale.
func withinWindow(staleness, w time.Duration) bool {
	return w > 0 && staleness <= w
}

// heuristicStatus reports whether status is heuristically cacheable
// (RFC 9110 §15.1, RFC 9111 §4.2.2).
func heuristicStatus(status int) bool {
	switch status {
	case 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// understoodStatus: the statuses whose caching semantics strata implements,
// for must-understand (RFC 9111 §5.2.2.3). 206 is understood because the
// proxy stores partial content as slices.
func understoodStatus(status int) bool {
	switch status {
	case 302, 303, 307, 451:
		return true
	}
	return heuristicStatus(status)
}

// storeFreshness fills si's FreshnessInfo, Heuristic and Expires from the
// merged Cache-Control in si.CC and f (RFC 9111 §4.2.1: s-maxage when
// shared, max-age, Expires - Date, then a heuristic).
func storeFreshness(si *StoreInfo, status int, f *respFields, o *PolicyOptions) {
	cc := &si.CC
	si.NoCache = cc.NoCache
	si.MustRevalidate = cc.MustRevalidate || (o.Shared && (cc.ProxyRevalidate || cc.SMaxAge >= 0))
	si.StaleWhileRevalidate = deltaOrNone(cc.StaleWhileRevalidate)
	si.StaleIfError = deltaOrNone(cc.StaleIfError)
	if si.Targeted == TargetedNone {
		si.Expires = storeExpires(f.lines(&f.expires, fasthttp.HeaderExpires)) // RFC 9213 §2.1: ignored under a targeted field
	}
	switch {
	case o.Shared && cc.SMaxAge >= 0:
		si.Lifetime = Seconds(cc.SMaxAge)
	case cc.MaxAge >= 0:
		si.Lifetime = Seconds(cc.MaxAge)
	case !si.Expires.IsZero():
		si.Lifetime = min(max(0, si.Expires.Sub(si.Date)), Seconds(deltaMax))
	case heuristicStatus(status) || cc.Public:
		si.Lifetime = heuristicLifetime(si, o)
		si.Heuristic = si.Lifetime > 0
	}
}

// expiresInvalid is the "time in the past" an invalid Expires stands for
// (§5.3).
var expiresInvalid = time.Unix(0, 0).UTC()

// storeExpires returns the time of the Expires lines, zero when absent,
// expiresInvalid when invalid or when several lines disagree (§4.2.1: the
// stale reading).
func storeExpires(lines [][]byte) time.Time {
	if len(lines) == 0 {
		return time.Time{}
	}
	t, ok := ParseDate(lines[0])
	if !ok {
		return expiresInvalid
	}
	for _, l := range lines[1:] {
		if u, ok := ParseDate(l); !ok || !u.Equal(t) {
			return expiresInvalid
		}
	}
	return t
}

// heuristicLifetime is §4.2.2's heuristic: a fraction of the time since
// Last-Modified, capped; else DefaultTTL.
func heuristicLifetime(si *StoreInfo, o *PolicyOptions) time.Duration {
	var d time.Duration
	if o.HeuristicFraction > 0 && !si.LastModified.IsZero() && si.LastModified.Before(si.Date) {
		since := si.Date.Sub(si.LastModified)
		d = time.Duration(float64(since) * o.HeuristicFraction)
		if o.HeuristicMax > 0 {
			d = min(d, o.HeuristicMax)
		}
	}
	if d <= 0 {
		d = o.DefaultTTL
	}
	return max(d, 0)
}

// deltaOrNone converts a parsed RFC 5861 window: -1 (absent) stays
// negative.
func deltaOrNone(s int64) time.Duration {
	if s < 0 {
		return -1
	}
	return Seconds(s)
}

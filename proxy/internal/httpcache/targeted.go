package httpcache

// Targeted cache-control fields (RFC 9213). An origin behind CDNs often
// wants one policy for browsers and another for the CDN: it sends
// Cache-Control for everyone and CDN-Cache-Control for CDN caches, or a
// field addressed to one cache (here PolicyOptions.TargetedField, by
// default Strata-Cache-Control). The rules strata follows, by section:
//
//   - §2.1 target list: strata's is [TargetedField, CDN-Cache-Control]
//     (CDN-Cache-Control left out with IgnoreCDNCacheControl). The first
//     field in that order that is present, valid and non-empty is the
//     response's caching policy for strata, and Cache-Control and Expires
//     are then ignored for storing and freshness. With none, Cache-Control
//     and Expires apply as usual. Chosen response by response.
//   - §2.1 directives: max-age, must-revalidate, no-store, no-cache and
//     private (the five a cache MUST implement), and also s-maxage,
//     proxy-revalidate, public, must-understand, immutable, no-transform,
//     stale-while-revalidate and stale-if-error, with their Cache-Control
//     semantics (strata is a shared cache, so s-maxage applies).
//     Request-only and unknown directives are ignored.
//   - §2.1 targeted fields not on the list (another cache's field) do not
//     change what strata does and are passed through untouched.
//   - §2.2 parsing: a Dictionary Structured Field (RFC 8941, sfdict.go);
//     several field lines are read as one field joined with commas (a
//     string cannot span lines). An empty field, or one with any syntax
//     error, is ignored as if absent.
//   - Values: delta-seconds directives take an Integer; anything else
//     (a negative Integer, a Decimal, a String such as max-age="60") is an
//     invalid value, read as 0 (stale), as for Cache-Control (RFC 9111
//     §4.2.1). Integers over 2^31 become 2^31. Boolean directives count
//     whatever their value, except the explicit Boolean false (?0), which
//     means the directive is absent. A field list (no-cache="a" or
//     private=("a" "b")) is read as the unqualified directive, as strata
//     reads Cache-Control. A repeated directive: the last one wins
//     (Dictionary semantics, §4.2.2 of RFC 8941). Parameters are ignored.
//   - §3 CDN-Cache-Control is forwarded downstream unchanged (a CDN tier
//     further down may act on it); the field addressed to strata is
//     removed, as Surrogate-Control is, and is not stored: a 304 that
//     refreshes a stored response must carry it again to keep its effect.
//   - Surrogate-Control (surrogate.go) still applies on top of the chosen
//     policy: its no-store refuses, its max-age sets the lifetime.
//   - Nothing here lifts the rules that protect the request (its
//     no-store, Authorization, Set-Cookie, Vary: *, the status).

// Targeted says which field gave a response's caching policy.
type Targeted uint8

const (
	// TargetedNone: Cache-Control and Expires.
	TargetedNone Targeted = iota
	// TargetedOwn: PolicyOptions.TargetedField.
	TargetedOwn
	// TargetedCDN: CDN-Cache-Control.
	TargetedCDN
)

// HeaderCDNCacheControl names CDN-Cache-Control (RFC 9213 §3).
const HeaderCDNCacheControl = "CDN-Cache-Control"

// DefaultTargetedField is the default PolicyOptions.TargetedField.
const DefaultTargetedField = "Strata-Cache-Control"

// readTargeted fills cc from the first usable field of strata's target
// list in f and reports which one it was; cc is left reset when none is.
// REQUIRES: cc was reset. It does not allocate.
func readTargeted(cc *CacheControl, f *respFields, o *PolicyOptions) Targeted {
	if parseTargeted(cc, f.lines(&f.own, o.TargetedField)) {
		return TargetedOwn
	}
	if !o.IgnoreCDNCacheControl && parseTargeted(cc, f.lines(&f.cdn, HeaderCDNCacheControl)) {
		return TargetedCDN
	}
	return TargetedNone
}

// parseTargeted parses the lines of one targeted field into cc and
// reports whether it was valid and non-empty; when not, cc is reset.
func parseTargeted(cc *CacheControl, lines [][]byte) bool {
	if len(lines) == 0 {
		return false
	}
	cc.reset()
	n := 0
	for _, line := range lines {
		ok := sfDictionary(trimSpace(line), func(m sfMember) {
			n++
			cc.applyTargeted(m)
		})
		if !ok || len(trimSpace(line)) == 0 {
			cc.reset()
			return false
		}
	}
	if n == 0 {
		cc.reset()
		return false
	}
	return true
}

// applyTargeted records one member of a targeted field (see the rules
// above).
func (cc *CacheControl) applyTargeted(m sfMember) {
	on := m.kind != sfBoolean || m.val[1] != '0'
	switch string(m.key) {
	case "max-age":
		cc.MaxAge = sfDelta(m)
	case "s-maxage":
		cc.SMaxAge = sfDelta(m)
	case "stale-while-revalidate":
		cc.StaleWhileRevalidate = sfDelta(m)
	case "stale-if-error":
		cc.StaleIfError = sfDelta(m)
	case "no-store":
		cc.NoStore = on
	case "no-cache":
		cc.NoCache = on
	case "private":
		cc.Private = on
	case "public":
		cc.Public = on
	case "must-revalidate":
		cc.MustRevalidate = on
	case "proxy-revalidate":
		cc.ProxyRevalidate = on
	case "must-understand":
		cc.MustUnderstand = on
	case "immutable":
		cc.Immutable = on
	case "no-transform":
		cc.NoTransform = on
	}
}

// sfDelta reads a delta-seconds directive's value: a non-negative Integer,
// capped at 2^31; anything else is 0 (stale).
func sfDelta(m sfMember) int64 {
	if m.kind != sfInteger {
		return 0
	}
	n, ok := parseDelta(m.val)
	if !ok {
		return 0 // negative
	}
	return n
}

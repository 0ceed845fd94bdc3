package httpcache

import "github.com/valyala/fasthttp"

// CacheControl is a parsed Cache-Control field (RFC 9111 §5.2), request or
// response: the same struct holds both kinds of directive, and each rule
// reads only the ones that apply to it.
//
// Parsing. parseCacheControl resets the struct and parses one field value;
// add merges one more field line into what is already there, which is how
// a message with several Cache-Control lines is read (RFC 9110 §5.3: lines
// combine as one comma-separated list). The parser never allocates and
// keeps no reference to the input: a CacheControl may be copied and kept.
//
// Tolerance, and the safe reading of bad input (each choice errs towards
// serving less from cache, never more):
//   - Directive names are case-insensitive (§5.2). Unknown directives and
//     extensions are ignored; a quoted string is skipped as a unit, so
//     `ext="max-age=9, x"` never yields a max-age.
//   - A name must be followed directly by '=' to take a value: `max-age =5`
//     is an unknown directive, `max-age= 5` an invalid value.
//   - delta-seconds (§1.2.2): digits only, quoted digits accepted; a value
//     larger than 2^31 becomes 2^31. An invalid value (empty, negative,
//     fractional, `'5'`, `5a`) of max-age, s-maxage, stale-while-revalidate,
//     stale-if-error or max-stale counts as 0, so the response is stale and
//     no stale window opens (§4.2.1: "caches are encouraged to consider
//     responses that have invalid freshness information to be stale"). An
//     invalid min-fresh is ignored (it only ever asks for fresher responses).
//   - A numeric directive repeated with different values (§4.2.1 allows
//     "the first occurrence" or "stale"): the stale reading, 0; for
//     min-fresh, the larger value. Equal repeats are harmless.
//   - no-cache and private with a field list (`no-cache="Set-Cookie"`) are
//     treated as the unqualified directives, which the RFC allows and which
//     never leaks a listed field (§5.2.2.4, §5.2.2.7).
//   - max-stale without a value means any staleness (MaxStaleAny).
type CacheControl struct {
	NoStore         bool // request and response
	NoCache         bool // request and response (qualified form read as unqualified)
	Private         bool // response (qualified form read as unqualified)
	Public          bool // response
	MustRevalidate  bool // response
	ProxyRevalidate bool // response
	MustUnderstand  bool // response (§5.2.2.3)
	NoTransform     bool // request and response
	OnlyIfCached    bool // request
	Immutable       bool // response (RFC 8246)
	MaxStaleAny     bool // request: max-stale without a value

	// Seconds; -1 when absent. Values are capped at 2^31 (§1.2.2).
	MaxAge               int64 // request and response
	SMaxAge              int64 // response
	MaxStale             int64 // request (with a value)
	MinFresh             int64 // request
	StaleWhileRevalidate int64 // response (RFC 5861)
	StaleIfError         int64 // request and response (RFC 5861)
}

// deltaMax is the value an overflowing delta-seconds becomes (§1.2.2).
const deltaMax = 1 << 31

// parseCacheControl resets cc and parses one Cache-Control field value into
// it. It never fails: see CacheControl for how bad input is read.
func parseCacheControl(cc *CacheControl, value []byte) {
	cc.reset()
	cc.add(value)
}

// reset sets cc to "no directives".
func (cc *CacheControl) reset() {
	*cc = CacheControl{MaxAge: -1, SMaxAge: -1, MaxStale: -1, MinFresh: -1,
		StaleWhileRevalidate: -1, StaleIfError: -1}
}

// add merges the directives of one more Cache-Control field line into cc.
// REQUIRES: cc was reset (or parsed) before the first add.
func (cc *CacheControl) add(value []byte) {
	for len(value) > 0 {
		var name, arg []byte
		var hasArg bool
		name, arg, hasArg, value = nextDirective(value)
		if len(name) > 0 {
			cc.apply(name, arg, hasArg)
		}
	}
}

// nextDirective splits off the first list element of v: its name, its argument
// (unquoted, escapes left in place) and whether '=' followed the name.
func nextDirective(v []byte) (name, arg []byte, hasArg bool, rest []byte) {
	i := 0
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == ',') {
		i++
	}
	start := i
	for i < len(v) && v[i] != '=' && v[i] != ',' {
		i++
	}
	name = v[start:i]
	if i == len(v) || v[i] == ',' {
		return trimRight(name), nil, false, v[i:]
	}
	if hasSpace(name) {
		// `max-age =5`: the name is not a token; skip the element.
		name = nil
	}
	i++ // '='
	if i < len(v) && v[i] == '"' {
		end := quotedEnd(v, i)
		arg = v[i+1 : end]
		i = end
		if i < len(v) {
			i++ // closing quote
		}
		for i < len(v) && v[i] != ',' { // junk after the quote
			i++
		}
		return name, arg, true, v[i:]
	}
	s := i
	for i < len(v) && v[i] != ',' {
		i++
	}
	return name, trimRight(v[s:i]), true, v[i:]
}

// quotedEnd returns the index of the quote closing the quoted string that
// opens at v[open], or len(v) when it is unterminated.
func quotedEnd(v []byte, open int) int {
	for i := open + 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(v)
}

func hasSpace(b []byte) bool {
	for _, c := range b {
		if c == ' ' || c == '\t' {
			return true
		}
	}
	return false
}

// apply records one directive. Boolean directives ignore any argument.
func (cc *CacheControl) apply(name, arg []byte, hasArg bool) {
	switch len(name) {
	case 6:
		cc.applyBool(name, &cc.Public, "public")
	case 7:
		if equalLower(name, "max-age") {
			setDelta(&cc.MaxAge, arg, hasArg)
		} else {
			cc.applyBool(name, &cc.Private, "private")
		}
	case 8:
		if equalLower(name, "no-cache") {
			cc.NoCache = true
		} else if equalLower(name, "no-store") {
			cc.NoStore = true
		} else if equalLower(name, "s-maxage") {
			setDelta(&cc.SMaxAge, arg, hasArg)
		}
	case 9:
		if equalLower(name, "immutable") {
			cc.Immutable = true
		} else if equalLower(name, "max-stale") {
			cc.setMaxStale(arg, hasArg)
		} else if equalLower(name, "min-fresh") {
			cc.setMinFresh(arg, hasArg)
		}
	default:
		cc.applyLong(name, arg, hasArg)
	}
}

func (cc *CacheControl) applyBool(name []byte, dst *bool, want string) {
	if equalLower(name, want) {
		*dst = true
	}
}

func (cc *CacheControl) applyLong(name, arg []byte, hasArg bool) {
	switch {
	case equalLower(name, "no-transform"):
		cc.NoTransform = true
	case equalLower(name, "must-revalidate"):
		cc.MustRevalidate = true
	case equalLower(name, "proxy-revalidate"):
		cc.ProxyRevalidate = true
	case equalLower(name, "must-understand"):
		cc.MustUnderstand = true
	case equalLower(name, "only-if-cached"):
		cc.OnlyIfCached = true
	case equalLower(name, "stale-while-revalidate"):
		setDelta(&cc.StaleWhileRevalidate, arg, hasArg)
	case equalLower(name, "stale-if-error"):
		setDelta(&cc.StaleIfError, arg, hasArg)
	}
}

func (cc *CacheControl) setMaxStale(arg []byte, hasArg bool) {
	if !hasArg {
		cc.MaxStaleAny = true
		return
	}
	setDelta(&cc.MaxStale, arg, true)
}

func (cc *CacheControl) setMinFresh(arg []byte, hasArg bool) {
	n, ok := parseDelta(arg)
	if !hasArg || !ok {
		return
	}
	if n > cc.MinFresh {
		cc.MinFresh = n
	}
}

// setDelta stores a freshness-granting delta-seconds: invalid or
// conflicting values become 0 (see CacheControl).
func setDelta(dst *int64, arg []byte, hasArg bool) {
	n, ok := parseDelta(arg)
	if !hasArg || !ok {
		n = 0
	}
	if *dst >= 0 && *dst != n {
		n = 0
	}
	*dst = n
}

// parseDelta parses delta-seconds (§1.2.2): one or more digits, capped at
// 2^31. It reports false for anything else.
func parseDelta(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < deltaMax {
			n = n*10 + int64(c-'0')
		}
	}
	return min(n, deltaMax), true
}

// NoTransform reports whether h's Cache-Control carries no-transform
// (RFC 9111 §5.2.2.6): no intermediary may change the content, its
// coding included. Read from Cache-Control itself, whichever field gave
// strata's caching policy: the directive is addressed to every
// intermediary.
func NoTransform(h *fasthttp.ResponseHeader) bool {
	var cc CacheControl
	cc.reset()
	for _, line := range h.PeekAll(fasthttp.HeaderCacheControl) {
		cc.add(line)
	}
	return cc.NoTransform
}

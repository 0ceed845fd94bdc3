package httpcache

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/valyala/fasthttp"
)

// KeyOptions shape the primary cache key (BuildKey).
type KeyOptions struct {
	// IgnoreQuery drops the query: /a?x=1 and /a share one entry.
	// Default false.
	IgnoreQuery bool
	// SortQuery orders query parameters by name (stable: repeated names
	// keep their relative order, since applications may read them in order).
	// Default false. Queries with more than maxQueryParams parameters keep
	// their order (they are still keyed correctly, only not merged).
	SortQuery bool
	// IgnoreParams names query parameters left out of the key (exact,
	// case-sensitive match on the name as sent, e.g. "utm_source").
	// Default none.
	IgnoreParams []string
	// IncludeHeaders names request fields whose values join the key, in
	// this order (e.g. "Accept-Language" for a site that negotiates without
	// sending Vary). Default none.
	IncludeHeaders []string
}

// maxQueryParams bounds the query parameters SortQuery sorts or IgnoreParams
// filters in place; see KeyOptions.SortQuery.
const maxQueryParams = 64

// EnsureDefaults: every default of KeyOptions is its zero value.
func (o *KeyOptions) EnsureDefaults() {}

// Validate reports every problem in o, wrapped in ErrPolicyOptions, or nil.
func (o *KeyOptions) Validate() error {
	var errs []error
	for i, p := range o.IgnoreParams {
		if p == "" {
			errs = append(errs, fmt.Errorf("ignore_params[%d] is empty", i))
		}
	}
	for i, h := range o.IncludeHeaders {
		if !isToken([]byte(h)) {
			errs = append(errs, fmt.Errorf("include_headers[%d] %q is not a field name", i, h))
		}
		if slices.IndexFunc(o.IncludeHeaders[:i], func(x string) bool {
			return compareFold([]byte(x), []byte(h)) == 0
		}) >= 0 {
			errs = append(errs, fmt.Errorf("include_headers[%d] %q is listed twice", i, h))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: key: %w", ErrPolicyOptions, errors.Join(errs...))
}

// BuildKey appends the primary cache key of req, reached over scheme, to
// dst and returns it. It does not allocate when dst has room.
//
// Format (one line, readable in logs):
//
//	scheme "://" host " " target [ "\n" headers ]
//
// where:
//   - scheme: lower-cased; a byte outside [a-z0-9+.-] becomes %XX, so the
//     scheme holds no ':'.
//   - host: the authority of an absolute-form request-target, else the Host
//     field; userinfo dropped, lower-cased, the port dropped when it is the
//     scheme's default (80 for http, 443 for https) or empty (RFC 3986
//     §6.2.3); a byte outside the host alphabet (letters, digits,
//     -._~!$&'()*+,;=:[] ) becomes %XX, '%' included, so the host holds no
//     space.
//   - target: the path as sent (no decoding, no dot-segment removal: those
//     could merge distinct resources), then "?" and the query when the
//     query left after IgnoreQuery/IgnoreParams is not empty. Two
//     normalisations only, both between spellings RFC 3986 calls
//     equivalent or invalid: the hex digits of a %XX triplet are
//     upper-cased (§6.2.2.1), and a raw control byte, space or DEL (never
//     valid in a request-target) is written as %XX.
//   - headers (only with IncludeHeaders): per configured name, in order,
//     "!;" when absent, else each line as len ":" value (len in decimal)
//     and then ";".
//
// Decoding the key back is unambiguous (the scheme ends at the first ':',
// the host at the first space, the target at the first newline, and the
// header part is length-prefixed), so two requests whose normalised scheme,
// host, target and included headers differ always get different keys.
func BuildKey(dst []byte, scheme []byte, req *fasthttp.Request, o *KeyOptions) []byte {
	host, target := splitTarget(req.Header.RequestURI())
	absolute := host != nil
	if !absolute {
		host = req.Header.Host()
	}
	dst = appendScheme(dst, scheme)
	dst = append(dst, "://"...)
	dst = appendHost(dst, host, scheme)
	dst = append(dst, ' ')
	if absolute && (len(target) == 0 || target[0] == '?') {
		dst = append(dst, '/') // an empty path in absolute form is "/" (RFC 9112 §3.2.2)
	}
	return appendTarget(dst, target, req, o)
}

// appendTarget writes the target and the included headers.
func appendTarget(dst, target []byte, req *fasthttp.Request, o *KeyOptions) []byte {
	path, query, _ := cut(target, '?')
	dst = appendURIPart(dst, path)
	if !o.IgnoreQuery && len(query) > 0 {
		dst = appendQuery(dst, query, o)
	}
	if len(o.IncludeHeaders) > 0 {
		dst = append(dst, '\n')
		for _, name := range o.IncludeHeaders {
			dst = appendIncludedHeader(dst, req.Header.PeekAll(name))
		}
	}
	return dst
}

// splitTarget splits an absolute-form request-target
// ("http://host/path") into its authority and the rest; for any other form
// it returns a nil host and the target unchanged.
func splitTarget(t []byte) (host, rest []byte) {
	i := 0
	for i < len(t) && (schemeByte(t[i]) || ('A' <= t[i] && t[i] <= 'Z')) {
		i++
	}
	if i == 0 || len(t)-i < 3 || string(t[i:i+3]) != "://" {
		return nil, t
	}
	a := t[i+3:]
	j := 0
	for j < len(a) && a[j] != '/' && a[j] != '?' {
		j++
	}
	host, rest = a[:j], a[j:]
	for k := len(host) - 1; k >= 0; k-- {
		if host[k] == '@' {
			host = host[k+1:]
			break
		}
	}
	return host, rest
}

func schemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '.' || c == '-'
}

func appendScheme(dst, scheme []byte) []byte {
	for _, c := range scheme {
		c = lower(c)
		if schemeByte(c) {
			dst = append(dst, c)
		} else {
			dst = appendPct(dst, c)
		}
	}
	return dst
}

const hexDigits = "0123456789ABCDEF"

func appendPct(dst []byte, c byte) []byte {
	return append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
}

// appendHost writes the normalised host (see BuildKey).
func appendHost(dst, host, scheme []byte) []byte {
	name, port := splitPort(host)
	if len(port) == 1 || (len(port) > 1 && defaultPort(scheme, port)) {
		host = name
	}
	for _, c := range host {
		c = lower(c)
		if hostByte(c) {
			dst = append(dst, c)
		} else {
			dst = appendPct(dst, c)
		}
	}
	return dst
}

// splitPort splits "name:port" (name may be an IP literal in brackets);
// port is nil when there is no ':' after the name.
func splitPort(host []byte) (name, port []byte) {
	i := len(host) - 1
	for i >= 0 && '0' <= host[i] && host[i] <= '9' {
		i--
	}
	if i < 0 || host[i] != ':' {
		return host, nil
	}
	name = host[:i]
	if len(name) > 0 && name[0] == '[' && name[len(name)-1] != ']' {
		return host, nil // a colon inside an IPv6 literal
	}
	return name, host[i:]
}

// defaultPort: port (with its ':') is the default one for scheme.
func defaultPort(scheme, port []byte) bool {
	p := string(port[1:])
	switch {
	case equalLower(scheme, "http"):
		return p == "80"
	case equalLower(scheme, "https"):
		return p == "443"
	}
	return false
}

func hostByte(c byte) bool {
	if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '[', ']':
		return true
	}
	return false
}

// appendURIPart writes a path or query segment: %xx upper-cased, raw
// controls, space and DEL escaped.
func appendURIPart(dst, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]):
			dst = append(dst, '%', upper(b[i+1]), upper(b[i+2]))
			i += 2
		case c <= ' ' || c == 0x7f:
			dst = appendPct(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// appendQuery writes "?" and the query filtered by IgnoreParams and
// sorted by SortQuery, or nothing when no parameter is left.
func appendQuery(dst, q []byte, o *KeyOptions) []byte {
	if !o.SortQuery && len(o.IgnoreParams) == 0 {
		dst = append(dst, '?')
		return appendURIPart(dst, q)
	}
	var params [maxQueryParams]span
	n := 0
	for i := 0; i <= len(q); {
		s := i
		for i < len(q) && q[i] != '&' {
			i++
		}
		p := q[s:i]
		i++
		if !ignoredParam(p, o.IgnoreParams) {
			if n < len(params) {
				params[n] = span{s, s + len(p)}
			}
			n++
		}
	}
	if n > len(params) {
		return appendQueryInOrder(dst, q, o)
	}
	list := params[:n]
	if o.SortQuery {
		slices.SortStableFunc(list, func(a, b span) int {
			return compareParamNames(q[a.s:a.e], q[b.s:b.e])
		})
	}
	if len(list) == 0 || (len(list) == 1 && list[0].s == list[0].e) {
		return dst
	}
	dst = append(dst, '?')
	for i, sp := range list {
		if i > 0 {
			dst = append(dst, '&')
		}
		dst = appendURIPart(dst, q[sp.s:sp.e])
	}
	return dst
}

// appendQueryInOrder filters without sorting (more than maxQueryParams).
func appendQueryInOrder(dst, q []byte, o *KeyOptions) []byte {
	first := true
	for len(q) > 0 || first {
		var p []byte
		p, q, _ = cut(q, '&')
		if ignoredParam(p, o.IgnoreParams) {
			if len(q) == 0 {
				break
			}
			continue
		}
		if first {
			dst = append(dst, '?')
		} else {
			dst = append(dst, '&')
		}
		first = false
		dst = appendURIPart(dst, p)
	}
	return dst
}

func paramName(p []byte) []byte {
	name, _, _ := cut(p, '=')
	return name
}

func compareParamNames(a, b []byte) int {
	x, y := paramName(a), paramName(b)
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			return int(x[i]) - int(y[i])
		}
	}
	return len(x) - len(y)
}

func ignoredParam(p []byte, ignore []string) bool {
	if len(ignore) == 0 {
		return false
	}
	name := paramName(p)
	for _, s := range ignore {
		if string(name) == s {
			return true
		}
	}
	return false
}

// appendIncludedHeader writes one included field (see BuildKey).
func appendIncludedHeader(dst []byte, lines [][]byte) []byte {
	if len(lines) == 0 {
		return append(dst, "!;"...)
	}
	for _, l := range lines {
		dst = strconv.AppendInt(dst, int64(len(l)), 10)
		dst = append(dst, ':')
		dst = append(dst, l...)
	}
	return append(dst, ';')
}

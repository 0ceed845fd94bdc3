package httpcache

// Accept-Encoding normalisation. Browsers spell the same preference in
// dozens of ways ("gzip, deflate, br", "br;q=1.0, gzip;q=0.8, *;q=0.1",
// "GZIP,BR", ...); with Vary: Accept-Encoding each spelling would be its
// own stored variant and its own origin fetch. strata rewrites the
// request's field, before the cache key is built and before the request
// is forwarded, to the one coding it will use for the client: br, gzip or
// identity, so a URL has at most three encoding variants, as CDNs do.
//
// The choice (RFC 9110 §12.5.3):
//   - Each element is a coding with an optional weight (q, 0 to 1, at most
//     three decimals). A coding with q=0 is not acceptable. "x-gzip" is
//     gzip (§8.4.1.3). "*" matches every coding not listed by name. Names
//     are case-insensitive; other parameters are ignored. An element whose
//     weight is not a valid qvalue counts as q=0: a malformed preference
//     never gets the client a coding it may not decode.
//   - br or gzip, whichever has the higher weight (br on a tie), when its
//     weight is above 0; otherwise identity. Other codings (deflate, zstd,
//     compress) are dropped: strata neither stores nor makes them, and an
//     origin asked only for them would multiply variants again.
//   - A request without the field, or with an empty one, gets identity
//     (RFC 9110 allows any coding then, but origins send identity and one
//     spelling keeps the variant count down).

// The normalised Accept-Encoding values. Read-only.
var (
	AcceptBr       = []byte("br")
	AcceptGzip     = []byte("gzip")
	AcceptIdentity = []byte("identity")
)

// HeaderAcceptEncoding names Accept-Encoding as bytes.
var HeaderAcceptEncoding = []byte("Accept-Encoding")

// NormalAcceptEncoding returns the normalised value (AcceptBr, AcceptGzip
// or AcceptIdentity) of a request's Accept-Encoding lines (none when the
// field is absent). It does not allocate; the result is one of the
// read-only values above.
func NormalAcceptEncoding(lines [][]byte) []byte {
	br, gz, star := -1, -1, -1 // weights in thousandths; -1 unlisted
	for _, l := range lines {
		for len(l) > 0 {
			var m []byte
			m, l = nextMember(l)
			coding, params, _ := cut(m, ';')
			coding = trimSpace(coding)
			q := weight(params)
			switch {
			case equalLower(coding, "br"):
				br = max(br, q)
			case equalLower(coding, "gzip"), equalLower(coding, "x-gzip"):
				gz = max(gz, q)
			case len(coding) == 1 && coding[0] == '*':
				star = max(star, q)
			}
		}
	}
	if br < 0 {
		br = star
	}
	if gz < 0 {
		gz = star
	}
	switch {
	case br > 0 && br >= gz:
		return AcceptBr
	case gz > 0:
		return AcceptGzip
	}
	return AcceptIdentity
}

// weight returns the q parameter among params (";"-separated, after the
// coding) in thousandths: 1000 when absent, 0 when invalid.
func weight(params []byte) int {
	for len(params) > 0 {
		var p []byte
		p, params, _ = cut(params, ';')
		name, val, ok := cut(trimSpace(p), '=')
		if ok && equalLower(trimSpace(name), "q") {
			return qvalue(trimSpace(val))
		}
	}
	return 1000
}

// qvalue parses ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
// (RFC 9110 §12.4.2) in thousandths; anything else is 0.
func qvalue(v []byte) int {
	if len(v) == 0 || len(v) > 5 || (v[0] != '0' && v[0] != '1') {
		return 0
	}
	n := int(v[0]-'0') * 1000
	if len(v) == 1 {
		return n
	}
	if v[1] != '.' {
		return 0
	}
	scale := 100
	for _, c := range v[2:] {
		if c < '0' || c > '9' || (n == 1000 && c != '0') {
			return 0
		}
		n += int(c-'0') * scale
		scale /= 10
	}
	return n
}

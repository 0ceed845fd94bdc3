// Package httpcache holds the HTTP caching rules strata follows, as pure
// functions over fasthttp headers: RFC 9111 and the RFCs it leans on.
//
//   - cachecontrol.go: Cache-Control request and response directives
//     (RFC 9111 §5.2), read the safe way when they are malformed.
//   - age.go, date.go: Age (§5.1) and the current age of a stored
//     response (§4.2.3); HTTP-dates (RFC 9110 §5.6.7).
//   - policy.go, freshness.go: what a request allows (ParseRequest), whether
//     a response may be stored and for how long (StoreDecision, §3, §4.2),
//     and how a stored response may answer a request (Evaluate: fresh,
//     stale as allowed, stale-while-revalidate, must validate; RFC 5861).
//   - vary.go: secondary cache keys (VaryKey, §4.1).
//   - conditional.go: entity-tag comparison, If-None-Match and
//     If-Modified-Since (NotModified), If-Range, and which stored response
//     a 304 selects (Selects304, §4.3.4).
//   - surrogate.go: Surrogate-Control, the field an origin addresses to its
//     surrogates (W3C Edge Architecture 1.0), and how it overrides
//     Cache-Control for strata.
//   - targeted.go: CDN-Cache-Control and strata's own targeted field
//     (RFC 9213), which replace Cache-Control and Expires for strata;
//     sfdict.go: the RFC 8941 Dictionary reader they are parsed with.
//   - key.go: the primary cache key (BuildKey) and its KeyOptions.
//   - fields.go, headers.go: which fields are hop-by-hop, stored, updated by
//     a 304 or carried by one; every header name strata uses as bytes.
//   - lex.go: lists, tokens, whitespace and ASCII case folding.
//
// Nothing here keeps a reference to its input or allocates on the request
// path, except where a doc says otherwise; results that borrow a header's
// bytes (StoreInfo.ETag) say so and follow fasthttp's Peek rule. Headers
// must not have DisableNormalizing set: fields are looked up by their
// normalised names. Bad input is never an error: each rule reads it the way
// that serves less from the cache, never more, and says how.
//
// The package imports only the standard library and fasthttp; strata's
// other packages never reach it but through proxy.
package httpcache

// Package proxy is strata's HTTP core: a fasthttp handler that answers
// from a Store (the hybrid cache) and fills it from the origins.
//
// New builds a Server over a Store from Options; HTTPServer is the
// fasthttp.Server that serves it, Close stops its fills. NewAdmin serves
// metrics, health, readiness and purge on a listener of its own.
//
// A request is refused when malformed (400, 431) or when no origin takes
// its Host (421); passed through when it may not use the cache (method,
// request no-store); answered from the store when a stored response may
// serve it (fresh, stale as allowed, a 304 for a matching conditional, a
// HEAD from a stored GET); otherwise fetched by a fill: one origin request
// per key, shared by every request that arrives meanwhile, streamed to
// them and into the store at once, and committed only when complete.
// Ranges are cut from stored slices; a missing slice is fetched with a
// Range request (partial caching). Unsafe methods invalidate their URL.
// An origin failure before the body is 502 (504 for a timeout); one
// mid-body cuts the client's connection and is never stored.
//
// The HTTP rules themselves are pure functions in proxy/internal:
// httpcache (Cache-Control, Age, freshness and storability, Vary,
// conditionals, Surrogate-Control, the cache key, header names) and
// byterange (Range, Content-Range, multipart/byteranges).
//
// The design notes sit with the code they describe: a request's way
// through (server.go), misses and fills, memory bound and commit (fill.go),
// the stored format (object.go, object_slice.go, store.go), sliced bodies
// served whole or not at all (partial_source.go), ranges and partial
// caching (range_serve.go, slicefetch.go), revalidation (revalidate.go),
// stale serving (stale.go), variants (variants.go), invalidation and purge
// (invalidate.go, purge.go, tags.go), origin errors (origin_fault.go).
//
// Borrowed bytes: decoded records borrow the pooled per-request state's
// Value (Store.Lend: the store's own bytes under a pin, for large memory
// hits), released when the handler returns; everything written to the
// fasthttp response is copied (SetBody, AddBytesKV) before then, or, for a
// body from swapBodyMin up, handed over without a copy with the Value and
// its pin, which fasthttp releases once the response is written (setBody,
// lent_body.go). fasthttp-owned bytes (request headers, origin response
// headers) are copied into the fill's own buffers before the handler
// returns or the origin response is released. The hit path of a small
// object allocates nothing (TestHitAllocs).
package proxy

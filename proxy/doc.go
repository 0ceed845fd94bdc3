// Package proxy is strata's HTTP core: a fasthttp handler that answers
// from a Store (the hybrid cache) and fills it from the origins.
//
// # A request's way through
//
// fasthttp parses the request within Options.MaxHeaderBytes (431 beyond;
// other parse failures, duplicate Content-Length, bad Transfer-Encoding
// and duplicate Host are refused by fasthttp with 400). Handler then
// refuses a header carrying both Content-Length and Transfer-Encoding
// (400; fasthttp would let Transfer-Encoding win), picks the origin by
// Host (421 if none), and asks the policy (httpcache.ParseRequest) whether the
// request may use the cache. If not (method, request no-store) it is
// passed: forwarded and streamed back, "Cache-Status: strata; fwd=bypass".
// Otherwise httpcache.BuildKey makes the object key and the record is read from the
// store; a variant index there (variants.go) leads to the record of the
// request's variant. httpcache.Evaluate (freshness.go) then decides, with the
// request's and the response's directives: a fresh record, or a stale one
// the request's max-stale accepts, is served: stored status and headers,
// Age per RFC 9111 §4.2.3, Via, "Cache-Status: strata; hit;
// detail=memory|disk" (detail=stale when stale); an inline body is copied
// into fasthttp's response buffer, a sliced body streams slice by slice
// (sliceReader). HEAD is answered from a stored GET, and a matching
// If-None-Match / If-Modified-Since with a 304 (conditional_serve.go). A
// record stale within stale-while-revalidate or the grace is served the
// same way while one background revalidation runs (revalidate.go,
// stale.go). Anything else (must validate, corrupt, sliceless, none) goes
// to the miss path (fwd=stale, fwd=request, fwd=miss, fwd=uri-miss; ";
// stored" added when the response is still being stored as its headers
// go out, see fill.status), carrying the stored
// record along for revalidation and stale-if-error. Unsafe methods are
// passed and invalidate the URL on success (invalidate.go).
//
// # Misses and fills
//
// A miss joins the fill for its key in a sharded in-flight map, or starts
// one (fill.go). The fill runs in a goroutine owned by the Server, with
// its own context (derived from the Server's lifetime, bounded by
// FillTimeout): a client that leaves does not cancel it. It asks the
// origin for the whole GET, made conditional on the stored record's
// validators when it revalidates one (a 304 refreshes the record in place,
// see revalidate.go). When the headers arrive, httpcache.StoreDecision says whether
// the response may be stored (a varying one under its variant's key); if
// not (or its Content-Length exceeds MaxObjectSize, or it is a 5xx while a
// stored response may stand in for it), the response is handed to the leader alone, which
// streams it through, and every waiter makes its own origin request: a
// private answer is never shared. Otherwise all of them read the same
// body as it arrives (read-while-write), with "collapsed" in the waiters'
// Cache-Status. A request whose fill failed before it answered is answered
// as for an origin failure (stale if allowed, else 502 or 504); one whose
// fill fails after has its connection cut.
//
// Memory bound: the fill keeps FillWindow slice buffers (slot i%window
// holds slice i), pooled by size class and grown only with bytes that
// arrived; no Content-Length sizes an allocation. A completed slice is
// inserted into the store when the next one starts. A reader that falls
// behind the window reads evicted slices back from the store; if the store
// dropped one (admission) the reader fails with ErrFillLagged. If the
// object stops being stored mid-body (a chunked body growing past
// MaxObjectSize), the fill waits for its slowest reader instead, and stops
// when none is left. At most MaxFills fills run; beyond that misses are
// passed through. So fill memory ≤ MaxFills × FillWindow × (SliceSize+64).
//
// Commit: the body is stored only when it ended with EOF and its length
// matches the declared Content-Length; the last slice is inserted before
// the record, so a reader never sees a record whose slices were never
// written. A truncated or failed body is never recorded (its early slices
// are orphans that age out; their generation does not match any record),
// and every client reading it gets an error from the body stream, which
// makes fasthttp close the connection: short of the declared
// Content-Length, or a chunked body without its final chunk.
//
// # Stored format (object.go, object_slice.go)
//
// An object is a record under metaKey(key) = 'm'|key: versioned, with
// status, end-to-end headers (hop-by-hop, Connection-listed, Content-Length,
// Age and Alt-Svc removed), request/response times, Date, Expires,
// Last-Modified, the origin's Age, lifetime, stale windows, ETag, Vary and
// secondary (variant) key, flags (must-revalidate, heuristic, inline,
// no-cache), body length, slice size, a random generation,
// the body inline when it fits one slice, and a CRC-32C of everything but
// the body. Larger bodies are slices under sliceKey(key, i) =
// 's'|key|i|len(key), each with a header (version, generation, index,
// length, CRC-32C of the header) checked before a byte is served.
//
// One checksum per byte: body bytes are not checksummed by the proxy
// (format version 2; version 1 was, costing 8-24% of the CPU of large
// hits in the peer benchmark). They are checked where they can go bad:
// the hybrid cache verifies each entry read back from disk against its own
// CRC, and memory is trusted. A store without such a check (mapStore) gets
// none. Records and slices of another version decode as a miss (not
// counted as corrupt) and are never served; the next fill replaces them.
//
// # Sliced bodies: whole or not at all
//
// A 200 promises Content-Length, so a sliced body is settled before its
// status line (sliceSource.prepare). An object that is a 200 with a
// strong validator has every slice the response covers probed in the
// store (Store.Contains, no copy); the first missing one is fetched from
// the origin with a Range request whose answer must name the record's
// validator, size and slice size, else the request is a miss. A slice
// lost while the body streams (evicted, or found damaged when read) is
// fetched the same way. Any other object cannot have a slice fetched
// again, so every slice the response covers is read into buffers of its
// own first (up to FillWindow slices, within MaxLeasedBytes) and one
// missing makes the request a miss. What remains: an origin that fails or
// changes while a lost slice is fetched mid-body, and a slice lost after
// the probe of a body without a validator too large to read first; that
// response ends short (counted in strata_responses_cut_short_total) and
// fasthttp closes the connection. Fetching such an object whole again on
// every hit would cost more than the rare cut.
//
// # Errors
//
// Origin silent past ResponseTimeout 504 (the timeout applies to the
// headers and to each body read, see progressConn); an origin that keeps
// sending, slowly, is stopped by FillTimeout; mid-body, either cuts the
// client's connection and counts as a timeout. Every other origin
// failure before the body is 502 with a text naming it: unreachable
// (connect failed, or the connection ended before a response), a header
// block over OriginOptions.MaxHeaderBytes, a repeated or non-numeric
// Content-Length, too many 1xx responses, a malformed header, a framing
// strata cannot read (origin_fault.go). Only unreachable is retried,
// once: a response the origin did send would come the same way again.
// Each failure is counted under its kind in strata_origin_errors_total.
// None of these, nor 4xx/5xx answers without explicit freshness, are
// stored.
//
// # Borrowed bytes
//
// Decoded records borrow the Get buffer of the pooled per-request state;
// everything written to the fasthttp response is copied (SetBody,
// AddBytesKV) before the state returns to its pool. fasthttp-owned bytes
// (request headers, origin response headers) are copied into the fill's
// own buffers before the handler returns or the origin response is
// released. The hit path of a small object allocates nothing
// (TestHitAllocs).
package proxy

package proxy

import (
	"bufio"
	"bytes"
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"strata/hybrid"
	"strata/proxy/internal/httpcache"
)

// Revalidation (RFC 9111 §4.3). A stored response the request may not use
// as it is (httpcache.Evaluate says MustValidate) goes through the fill of
// its key like a miss, with the stored record handed to the fill (prior).
// When the record has validators, the fill's origin request carries
// If-None-Match (its ETag) and If-Modified-Since (its Last-Modified, as
// sent). Outcomes:
//   - 304 that selects the stored response (httpcache.Selects304: its ETag,
//     else its Last-Modified, equals the stored one, or it has neither):
//     the stored headers are updated from the 304 (every stored end-to-end
//     field the 304 also carries is replaced, but hop-by-hop, Content-Length,
//     Age, Alt-Svc, Content-Encoding, Content-Range and Content-MD5 never
//     are; a 304 without Date gets the time it arrived), StoreDecision is
//     run again on the result with the stored status, and the record is
//     re-inserted with the same generation and body, so its slices stay
//     valid. Every request waiting on the fill serves the refreshed record
//     (fwd=stale|request; fwd-status=304). If the refreshed response may
//     no longer be stored, the record is removed, and still served to the
//     waiters.
//   - a 304 that selects nothing: the fill asks again, unconditionally.
//   - 500, 502, 503 or 504 while the leader could serve the stored
//     response on error (stale-if-error, grace, or still fresh): the error
//     is not stored; each waiter serves the stored response if its own
//     Verdict allows (fwd=stale; detail=stale-if-error), else passes.
//   - a connection error or timeout: the same, else 502/504.
//   - anything else: the fill proceeds as a miss (a 200 replaces the entry).
//
// A stale-while-revalidate (or grace) hit serves the stored response and
// starts the same fill with no client waiting on it (revalidateInBackground):
// the fill map guarantees one per key, the Server owns its goroutine (its
// context derives from the Server's, Close waits for it).
type fillReval struct {
	pkey        []byte // primary (URL) key, owned; the fill's key unless it is a variant's
	prior       []byte // the stored record being revalidated, owned; nil on a plain miss
	priorObj    object // prior decoded (borrows prior)
	onError     bool   // the leader may serve prior if the origin fails
	conditional bool   // the origin request carries the prior's validators
	status      int    // the origin's status, once known
	rec         []byte // fillRefreshed: the refreshed record, owned, read-only
	vary, vkey  []byte // the response varies: its Vary value and secondary key
	epoch       uint64 // the variant index epoch the variant is stored under
}

// prepareFill gives the fill (led by this request) the primary key and the
// stored record it revalidates, if any.
func (s *Server) prepareFill(f *fill, st *reqState) {
	f.rv.pkey = append(f.rv.pkey[:0], st.pkey...)
	f.skey = f.key
	if !st.have {
		return
	}
	f.rv.prior = append([]byte(nil), st.rec...)
	if decodeObject(&f.rv.priorObj, f.rv.prior) != nil {
		f.rv.prior = nil
		return
	}
	f.rv.onError = st.verdict.ServeOnError
}

// addValidators makes the fill's origin request conditional on the stored
// response's validators (§4.3.1). REQUIRES: the client's own conditional
// fields were already dropped.
func (f *fill) addValidators(req *fasthttp.Request) {
	if f.rv.prior == nil {
		return
	}
	p := &f.rv.priorObj
	if len(p.ETag) > 0 {
		req.Header.SetBytesV(fasthttp.HeaderIfNoneMatch, p.ETag)
		f.rv.conditional = true
	}
	if lm := storedField(p.Headers, fasthttp.HeaderLastModified); len(lm) > 0 && !p.LastModified.IsZero() {
		req.Header.SetBytesV(fasthttp.HeaderIfModifiedSince, lm)
		f.rv.conditional = true
	}
}

// storedField returns the first stored header named name (ASCII case
// insensitive), or nil.
func storedField(kvs []headerKV, name string) []byte {
	for _, kv := range kvs {
		if len(kv.Key) == len(name) && bytes.EqualFold(kv.Key, []byte(name)) {
			return kv.Value
		}
	}
	return nil
}

// exchange sends the fill's request and reads the response headers,
// handling a 304 to a conditional fill: refreshed reports the record was
// refreshed (and the fill published as fillRefreshed).
func (s *Server) exchange(ctx context.Context, f *fill, o *origin, req *fasthttp.Request,
	resp *fasthttp.Response, rp *httpcache.RequestPolicy) (reqTime, respTime time.Time, refreshed bool, err error) {
	reqTime, respTime, err = s.originDo(ctx, o, req, resp)
	if err != nil || !f.rv.conditional || resp.StatusCode() != fasthttp.StatusNotModified {
		return reqTime, respTime, false, err
	}
	if s.refresh(f, rp, &resp.Header, respTime, reqTime) {
		return reqTime, respTime, true, nil
	}
	resp.CloseBodyStream()
	resp.Reset()
	req.Header.Del(fasthttp.HeaderIfNoneMatch)
	req.Header.Del(fasthttp.HeaderIfModifiedSince)
	f.rv.conditional = false
	reqTime, respTime, err = s.originDo(ctx, o, req, resp)
	return reqTime, respTime, false, err
}

// originDo is one timed origin round trip.
func (s *Server) originDo(ctx context.Context, o *origin, req *fasthttp.Request, resp *fasthttp.Response) (reqTime, respTime time.Time, err error) {
	reqTime = s.opts.Now()
	err = o.do(ctx, req, resp)
	// fasthttp reports a default Content-Type for a response without one;
	// a 304 would then overwrite the stored one with it.
	resp.Header.SetNoDefaultContentType(true)
	respTime = s.opts.Now()
	s.m.originDuration.Observe(respTime.Sub(reqTime).Seconds())
	return reqTime, respTime, err
}

// refresh applies a 304 to the prior record (see the type comment). It
// reports false when the 304 selects nothing.
func (s *Server) refresh(f *fill, rp *httpcache.RequestPolicy, h304 *fasthttp.ResponseHeader, respTime, reqTime time.Time) bool {
	p := &f.rv.priorObj
	if !httpcache.Selects304(h304, p.ETag, p.LastModified) {
		return false
	}
	h := &fasthttp.ResponseHeader{}
	if mergeHeaders(h, p.Headers, h304, respTime) != nil {
		return false // cannot happen: every line was parsed before
	}
	var si httpcache.StoreInfo
	httpcache.StoreDecision(&si, rp, p.Status, h, respTime, &s.cfg().Policy)
	o := *p // same generation, body length, inline body (borrowing f.rv.prior)
	o.ETag = append([]byte(nil), si.ETag...)
	if len(o.ETag) == 0 {
		o.ETag = nil
	}
	s.consumeSurrogate(h) // read, never stored (after si.ETag, which borrows h, is copied)
	o.Headers, _ = copyResponseHeaders(h, 0)
	o.RequestTime, o.ResponseTime = reqTime, respTime
	o.Date, o.Expires, o.LastModified = si.Date, si.Expires, si.LastModified
	o.AgeHeader = si.Age
	o.Lifetime, o.Heuristic, o.NoCache = si.Lifetime, si.Heuristic, si.NoCache
	o.StaleWhileRevalidate, o.StaleIfError = si.StaleWhileRevalidate, si.StaleIfError
	o.MustRevalidate = si.MustRevalidate
	rec := appendObject(nil, &o)
	s.storeRefreshed(f.key, rec, &si, respTime)
	f.mu.Lock()
	f.rv.rec, f.rv.status = rec, fasthttp.StatusNotModified
	f.state = fillRefreshed
	f.cond.Broadcast()
	f.mu.Unlock()
	return true
}

// storeRefreshed stores the refreshed record rec under key, or removes
// the record when the 304 made it unstorable, unless a variant index has
// taken the record's place meanwhile (compression at the edge put one in
// when it finished, or the URL varies now): the record would hide every
// variant, and the variants revalidate on their own. Index updates hold
// the key's variant lock, so the check and the write are one step.
func (s *Server) storeRefreshed(key, rec []byte, si *httpcache.StoreInfo, respTime time.Time) {
	m := s.vlocks.lock(key)
	defer m.Unlock()
	mkey := metaKey(nil, key)
	var v hybrid.Value // lent: an inline record is not copied to read its magic
	_, ok := s.store.Lend(mkey, &v)
	index := ok && isVariantIndex(v.Bytes())
	v.Release()
	if index {
		return
	}
	if si.Store {
		s.store.Insert(mkey, rec, s.storeExpiry(si, respTime))
	} else {
		s.store.Remove(mkey)
	}
}

// mergeHeaders writes into h the stored headers updated from the 304's
// (RFC 9111 §3.2): a field the 304 carries (and that may be stored)
// replaces every stored line of that name; a 304 without Date is dated
// now (its freshness is measured from now, not from the stored Date). The
// result is parsed from wire form, as fasthttp drops a Date set through
// its setters. It sets h304's NoDefaultContentType (a 304 without
// Content-Type must not replace the stored one with fasthttp's default).
func mergeHeaders(h *fasthttp.ResponseHeader, stored []headerKV, h304 *fasthttp.ResponseHeader, now time.Time) error {
	h304.SetNoDefaultContentType(true)
	conn := connectionValue(h304)
	replaced := func(name []byte) bool {
		if len(name) == len(httpcache.HeaderDate) && bytes.EqualFold(name, httpcache.HeaderDate) {
			return true // the 304's, or now
		}
		return httpcache.UpdatableField(name, conn) && len(h304.PeekBytes(name)) > 0
	}
	wire := append(make([]byte, 0, 1024), "HTTP/1.1 200 OK\r\n"...)
	line := func(k, v []byte) {
		wire = append(append(append(append(wire, k...), ": "...), v...), "\r\n"...)
	}
	for _, kv := range stored {
		if !replaced(kv.Key) {
			line(kv.Key, kv.Value)
		}
	}
	for k, v := range h304.All() {
		if httpcache.UpdatableField(k, conn) {
			line(k, v)
		}
	}
	if len(h304.Peek(fasthttp.HeaderDate)) == 0 {
		line([]byte(fasthttp.HeaderDate), fasthttp.AppendHTTPDate(nil, now.UTC()))
	}
	// A length, or the parser reads "until close" and adds Connection: close.
	wire = append(wire, "Content-Length: 0\r\n\r\n"...)
	h.SetNoDefaultContentType(true)
	// A buffer that holds the whole block: fasthttp refuses a header
	// larger than its reader's buffer (a default one is 4 KiB).
	return h.Read(bufio.NewReaderSize(bytes.NewReader(wire), len(wire)))
}

// storeExpiry is when the store may drop a response received at
// respTime: past its freshness, its stale windows and StaleIfUnreachable
// (unless must-revalidate or no-cache forbid serving it stale), and, when
// it has a validator, RevalidateKeep more so that it can still be
// revalidated with a conditional request instead of fetched again.
func (s *Server) storeExpiry(si *httpcache.StoreInfo, respTime time.Time) time.Time {
	keep := max(si.StaleWhileRevalidate, si.StaleIfError, s.cfg().Policy.Grace, 0)
	if !si.MustRevalidate && !si.NoCache {
		keep = max(keep, s.cfg().StaleIfUnreachable)
	}
	if len(si.ETag) > 0 || !si.LastModified.IsZero() {
		keep += max(s.cfg().RevalidateKeep, 0)
	}
	return respTime.Add(min(si.Lifetime, maxStoreLifetime) + keep)
}

// maxStoreLifetime caps the lifetime counted in a store expiry (a max-age
// of 2^31 s would overflow time arithmetic with the windows added).
const maxStoreLifetime = 100 * 365 * 24 * time.Hour

// keepPrior: an origin error answer that must not replace a stored
// response the leader may serve instead.
func (f *fill) keepPrior(status int) bool {
	return f.rv.prior != nil && f.rv.onError && serverError(status)
}

// serverError: the statuses stale-if-error covers (RFC 5861 §4).
func serverError(status int) bool {
	switch status {
	case 500, 502, 503, 504:
		return true
	}
	return false
}

// revalidateInBackground starts one revalidation of the stored response
// in st (just served stale) unless one runs for the key already, the
// server is closing, or MaxFills fills run.
func (s *Server) revalidateInBackground(ctx *fasthttp.RequestCtx, st *reqState, o *origin) {
	if s.closed.Load() || s.nfills.Load() >= int64(st.set.opts.MaxFills) {
		return
	}
	f, leader := s.fills.join(s, st.key)
	if leader {
		s.startFill(ctx, f, o, st, true)
		s.m.backgroundRevalidations.Inc()
	}
	f.release()
}

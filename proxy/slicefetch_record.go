package proxy

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/byterange"
	"strata/proxy/internal/httpcache"
)

// accept checks a 206 against the run it answers, then adopts or
// replaces the object's record (under the key's record lock, so that
// concurrent fetches of one object agree on one generation) and opens the
// fetch to readers.
func (sf *sliceFetch) accept(resp *fasthttp.Response, rp *httpcache.RequestPolicy, reqTime, respTime time.Time) error {
	s := sf.s
	a, b, total, ok := byterange.ParseContentRange(resp.Header.PeekBytes(httpcache.HeaderContentRange))
	start := int64(sf.first) * sf.sz
	end := min(int64(sf.last+1)*sf.sz, total) // exclusive
	cl := resp.Header.ContentLength()
	if !ok || a != start || total <= a || b != end-1 || (cl >= 0 && int64(cl) != end-start) {
		return fmt.Errorf("%w: Content-Range %q for slices %d-%d", errRangeRefused,
			resp.Header.PeekBytes(httpcache.HeaderContentRange), sf.first, sf.last)
	}
	var si httpcache.StoreInfo
	httpcache.StoreDecision(&si, rp, fasthttp.StatusPartialContent, &resp.Header, respTime, &s.cfg().Policy)
	s.consumeSurrogate(&resp.Header)
	if !si.Store || len(resp.Header.Peek("Vary")) > 0 || total > s.opts.MaxObjectSize {
		return errNotStorable
	}
	var cand object
	rec := sf.buildRecord(&cand, resp, &si, total, reqTime, respTime)
	digests := false
	if !hasValidator(&cand) {
		base, ok := sf.digestBase(total)
		if !ok {
			return sf.openPrivate(rec, end-start)
		}
		putSlab(rec)
		rec, digests = base, true
	} else {
		var stored bool
		rec, stored = s.adoptRecord(sf.key, rec, &cand)
		sf.private = !stored // fetch goroutine: its slices would be orphans
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	sf.rec, sf.digests = rec, digests
	if err := decodeObject(&sf.obj, sf.rec); err != nil {
		return err // cannot happen: we encoded or checked it
	}
	keep := max(sf.obj.StaleWhileRevalidate, sf.obj.StaleIfError, s.cfg().Policy.Grace)
	sf.expiry = sf.obj.ResponseTime.Add(sf.obj.Lifetime + keep)
	sf.want = end - start
	sf.bufs = make([][]byte, (sf.want+sf.sz-1)/sf.sz)
	sf.state = fetchReady
	sf.cond.Broadcast()
	return nil
}

// digestBase returns, for a 206 without a strong validator, the record
// the fetch completes: its base, when that lists slice digests for an
// object of total bytes (slice_digest.go). The record is not inserted
// again: the answer proves bytes, not freshness.
func (sf *sliceFetch) digestBase(total int64) ([]byte, bool) {
	var o object
	if sf.base == nil || decodeObject(&o, sf.base) != nil || !o.hasDigests() ||
		o.BodyLen != total || int64(o.SliceSize) != sf.sz {
		return nil, false
	}
	rec := sf.base
	sf.base = nil
	return rec, true
}

// buildRecord fills o as the partial record of the object a 206 is part
// of and returns its encoding (a slab); o borrows it.
func (sf *sliceFetch) buildRecord(o *object, resp *fasthttp.Response, si *httpcache.StoreInfo, total int64, reqTime, respTime time.Time) []byte {
	o.Status = fasthttp.StatusOK
	o.Partial = true
	o.Gen = rand.Uint64()
	o.SliceSize = int(sf.sz)
	o.BodyLen = total
	o.RequestTime, o.ResponseTime = reqTime, respTime
	o.Date, o.Expires, o.LastModified = si.Date, si.Expires, si.LastModified
	o.AgeHeader = si.Age // every Age line, RFC 9111 §5.1 (httpcache.ResponseAge)
	o.Lifetime, o.Heuristic = si.Lifetime, si.Heuristic
	o.StaleWhileRevalidate, o.StaleIfError = si.StaleWhileRevalidate, si.StaleIfError
	o.MustRevalidate = si.MustRevalidate
	var buf []byte
	o.Headers, buf = copyResponseHeaders(&resp.Header, 0)
	kept := o.Headers[:0]
	for _, h := range o.Headers {
		if !bytes.EqualFold(h.Key, httpcache.HeaderContentRange) {
			kept = append(kept, h)
		}
	}
	o.Headers = kept
	o.ETag = si.ETag // borrowed from resp until encoded below
	rec := getSlab(objectFixedLen + len(buf) + len(si.ETag) + 16 + 6*len(o.Headers))
	rec = appendObject(rec[:0], o)
	_ = decodeObject(o, rec) // o now borrows rec, not resp
	return rec
}

// adoptRecord returns the record the object's slices are to be written
// under, inserted: cand's (encoded in rec), with the stored record's
// generation when that one describes the same representation (same
// validator, size and slice size), so that its slices stay valid and its
// freshness is renewed by this response (RFC 9111 §3.4, §4.3.4); with a
// new generation otherwise (the object changed: its old slices are never
// served again). When key holds a variant index instead (the URL varies
// now: the origin's Vary, or compression at the edge put one in place of
// the record this fetch's reader started from), nothing is inserted
// (stored false): a record there would hide every variant. The fetch then
// only serves its waiters.
func (s *Server) adoptRecord(key, rec []byte, cand *object) (_ []byte, stored bool) {
	mu := s.fetches.recLock(key)
	mu.Lock()
	defer mu.Unlock()
	vm := s.vlocks.lock(key) // against publishEdgeIndex: see removeObject
	defer vm.Unlock()
	var kb [256]byte
	mk := metaKey(kb[:0], key)
	old, _, ok := s.store.Get(mk, nil)
	if ok && isVariantIndex(old) {
		return rec, false
	}
	var o object
	if ok && decodeObject(&o, old) == nil && o.Status == fasthttp.StatusOK && !o.inline() &&
		o.BodyLen == cand.BodyLen && o.SliceSize == cand.SliceSize && sameValidator(&o, cand) {
		cand.Gen = o.Gen
		again := appendObject(getSlab(len(rec)), cand) // cand borrows rec: encode into a new buffer
		putSlab(rec)
		rec = again
		_ = decodeObject(cand, rec)
	}
	keep := max(cand.StaleWhileRevalidate, cand.StaleIfError, s.cfg().Policy.Grace)
	s.store.Insert(mk, rec, cand.ResponseTime.Add(cand.Lifetime+keep))
	return rec, true
}

// recLock returns the mutex serialising record adoption for key.
func (fm *fetchMap) recLock(key []byte) *recMutex {
	return &fm.recMu[maphash.Bytes(fm.seed, key)%uint64(len(fm.recMu))]
}

// hasValidator reports whether o has a validator strong enough to join
// parts fetched at different times (RFC 9110 §8.8.1, §14.3 via RFC 9111
// §3.4): a strong ETag, or a Last-Modified at least 60 s before Date.
func hasValidator(o *object) bool {
	return httpcache.ETagMatchStrong(o.ETag, o.ETag) ||
		(len(o.ETag) == 0 && !o.LastModified.IsZero() && !o.Date.IsZero() && o.Date.Sub(o.LastModified) >= time.Minute)
}

// sameValidator reports whether a and b name the same representation:
// both have a validator (hasValidator) and their ETags (if any) match
// strongly, or, without ETags, their Last-Modified are equal.
func sameValidator(a, b *object) bool {
	if !hasValidator(a) || !hasValidator(b) {
		return false
	}
	if len(a.ETag) > 0 || len(b.ETag) > 0 {
		return httpcache.ETagMatchStrong(a.ETag, b.ETag)
	}
	return a.LastModified.Equal(b.LastModified)
}

package proxy

import (
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// Invalidation (RFC 9111 §4.4). A request with an unsafe method (anything
// but GET, HEAD, OPTIONS, TRACE: POST, PUT, DELETE, PATCH and unknown
// methods) is passed to the origin; when the answer is not an error (2xx,
// 3xx: httpcache.Invalidates), the stored responses for the target URI are
// removed, and those for the URIs in Location and Content-Location when
// they have the request's origin (same scheme, host and port: a response
// must not be able to evict another site's objects). Removal takes the record, its
// slices and, for a URL with variants, every listed variant and the index
// (removeObject); the store's Remove reaches the disk tier (the hybrid
// cache writes a tombstone). A fill in flight for the URL may still commit
// after the invalidation.

// invalidateUnsafe applies §4.4 after the origin answered resp to the
// client request in ctx.
func (s *Server) invalidateUnsafe(ctx *fasthttp.RequestCtx, resp *fasthttp.Response) {
	if !httpcache.Invalidates(ctx.Method(), resp.StatusCode()) {
		return
	}
	scheme := "http"
	if ctx.IsTLS() {
		scheme = "https"
	}
	s.removeObject(httpcache.BuildKey(nil, []byte(scheme), &ctx.Request, &s.cfg().Key))
	base, err := url.Parse(scheme + "://" + string(ctx.Request.Header.Host()) + string(ctx.Request.Header.RequestURI()))
	if err != nil || base.Host == "" {
		return
	}
	for _, name := range [...]string{fasthttp.HeaderLocation, fasthttp.HeaderContentLocation} {
		if v := resp.Header.Peek(name); len(v) > 0 {
			s.invalidateRef(ctx, base, string(v))
		}
	}
}

// invalidateRef removes the object at ref (resolved against base) when it
// has base's origin.
func (s *Server) invalidateRef(ctx *fasthttp.RequestCtx, base *url.URL, ref string) {
	u, err := base.Parse(ref)
	if err != nil || !sameOrigin(base, u) {
		return
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	ctx.Request.Header.CopyTo(&req.Header) // the key's IncludeHeaders come from this request
	req.Header.SetHost(u.Host)
	req.Header.SetRequestURI(u.RequestURI())
	s.removeObject(httpcache.BuildKey(nil, []byte(u.Scheme), req, &s.cfg().Key))
}

// sameOrigin compares scheme, host and port (defaults filled in).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		originPort(a) == originPort(b)
}

func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// removeObject removes the stored object under the object key key: its
// record and slices, or, when the record is a variant index, every listed
// variant and the index. It reports whether a record was found. It holds
// key's variant lock, so that a variant index checked and written under
// that lock (publishEdgeIndex) cannot put back an object removed
// meanwhile.
func (s *Server) removeObject(key []byte) bool {
	m := s.vlocks.lock(key)
	defer m.Unlock()
	return s.removeObjectLocked(key)
}

// removeObjectLocked is removeObject for a caller that holds key's
// variant lock, or that removes a variant (listed in an index whose
// primary key's lock it holds): the locks are striped, and a variant's
// stripe may be its primary's.
func (s *Server) removeObjectLocked(key []byte) bool {
	mkey := metaKey(nil, key)
	val, _, ok := s.store.Get(mkey, nil)
	if !ok {
		return false
	}
	var x variantIndex
	var o object
	switch {
	case isVariantIndex(val):
		if decodeVariantIndex(&x, val) == nil {
			for _, vk := range x.Keys {
				s.removeObjectLocked(variantKey(nil, key, x.Epoch, vk))
			}
		}
	case decodeObject(&o, val) == nil:
		for i := range o.slices() {
			s.store.Remove(sliceKey(nil, key, i))
		}
	}
	s.store.Remove(mkey)
	return true
}

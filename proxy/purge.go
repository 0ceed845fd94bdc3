package proxy

import (
	"fmt"
	"net/url"

	"github.com/valyala/fasthttp"
)

// Purge removes the stored object for rawURL (absolute http or https URL,
// keyed as a GET for it would be), its record and, when the record
// decodes, its slices. It reports whether a record was found. Purges
// reach the store only; a fill in flight for the URL still commits (issue
// 6 adds purge generations and tags).
func (s *Server) Purge(rawURL string) (bool, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false, fmt.Errorf("%w: %q", ErrPurgeURL, rawURL)
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetHost(u.Host)
	req.Header.SetRequestURI(u.RequestURI())
	key := BuildKey(nil, []byte(u.Scheme), req, &s.opts.Key)
	mkey := metaKey(nil, key)
	val, _, ok := s.store.Get(mkey, nil)
	if !ok {
		return false, nil
	}
	var o object
	if decodeObject(&o, val) == nil {
		for i := range o.slices() {
			s.store.Remove(sliceKey(nil, key, i))
		}
	}
	s.store.Remove(mkey)
	return true, nil
}

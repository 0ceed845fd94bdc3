package proxy

// cacheStatus enumerates the Cache-Status values (RFC 9211) the proxy
// sends; their bytes are built once per Server with its ViaName.
type cacheStatus uint8

const (
	csHitMemory         cacheStatus = iota // hit; detail=memory
	csHitDisk                              // hit; detail=disk
	csMiss                                 // fwd=miss: a record existed but was unusable (corrupt, slices missing)
	csMissStored                           // fwd=miss; stored
	csURIMiss                              // fwd=uri-miss: nothing stored under the key
	csURIMissStored                        // fwd=uri-miss; stored
	csCollapsed                            // fwd=uri-miss; stored; collapsed: answered from another request's fill
	csStale                                // fwd=stale: stored but not fresh
	csStaleStored                          // fwd=stale; stored
	csRequest                              // fwd=request: a stored response the request's directives refused
	csRequestStored                        // fwd=request; stored
	csBypass                               // fwd=bypass: the request may not use the cache
	csError                                // fwd=uri-miss; detail=error: the origin failed
	csHitStale                             // hit; detail=stale: served stale (stale-while-revalidate, grace, max-stale)
	csStale304                             // fwd=stale; fwd-status=304: revalidated, stored headers refreshed
	csRequest304                           // fwd=request; fwd-status=304: revalidated at the request's demand
	csStaleError                           // fwd=stale; detail=stale-if-error: the origin failed, stale served
	csCollapsedUnstored                    // fwd=uri-miss; collapsed: another request's fill, not being stored
	csCount
)

var cacheStatusText = [csCount]string{
	csHitMemory:     "hit; detail=memory",
	csHitDisk:       "hit; detail=disk",
	csMiss:          "fwd=miss",
	csMissStored:    "fwd=miss; stored",
	csURIMiss:       "fwd=uri-miss",
	csURIMissStored: "fwd=uri-miss; stored",
	csCollapsed:     "fwd=uri-miss; stored; collapsed",
	csStale:         "fwd=stale",
	csStaleStored:   "fwd=stale; stored",
	csRequest:       "fwd=request",
	csRequestStored: "fwd=request; stored",
	csBypass:        "fwd=bypass",
	csError:         "fwd=uri-miss; detail=error",
	csHitStale:      "hit; detail=stale",
	csStale304:      "fwd=stale; fwd-status=304",
	csRequest304:    "fwd=request; fwd-status=304",
	csStaleError:    "fwd=stale; detail=stale-if-error",

	csCollapsedUnstored: "fwd=uri-miss; collapsed",
}

// hit reports whether c answered from the cache without the origin.
func (c cacheStatus) hit() bool {
	return c == csHitMemory || c == csHitDisk || c == csHitStale
}

// stored returns the "; stored" form of a forward status.
func (c cacheStatus) stored() cacheStatus {
	switch c {
	case csMiss:
		return csMissStored
	case csURIMiss:
		return csURIMissStored
	case csStale:
		return csStaleStored
	case csRequest:
		return csRequestStored
	}
	return c
}

// unstored returns the form of c without "; stored".
func (c cacheStatus) unstored() cacheStatus {
	switch c {
	case csMissStored:
		return csMiss
	case csURIMissStored:
		return csURIMiss
	case csStaleStored:
		return csStale
	case csRequestStored:
		return csRequest
	case csCollapsed:
		return csCollapsedUnstored
	}
	return c
}

// metric returns the strata_requests_total label of c.
func (c cacheStatus) metric() metricStatus {
	switch c {
	case csHitMemory, csHitDisk:
		return msHit
	case csStale, csStaleStored, csHitStale, csStale304, csRequest304, csStaleError:
		return msStale
	case csBypass:
		return msBypass
	case csError:
		return msError
	}
	return msMiss
}

// buildCacheStatus returns the header values for name ("strata; hit; ...").
func buildCacheStatus(name string) [csCount][]byte {
	var out [csCount][]byte
	for i, t := range cacheStatusText {
		out[i] = []byte(name + "; " + t)
	}
	return out
}

package proxy

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/valyala/fasthttp"
)

// Limits of one POST /purge.
const (
	maxPurgeArgs = 256 // url=, tag= and prefix= values together
)

// purgeAnswer is the JSON body of POST /purge.
type purgeAnswer struct {
	URLs     []purgeURL `json:"urls,omitempty"`
	Tags     []string   `json:"tags,omitempty"`
	Prefixes []string   `json:"prefixes,omitempty"`
	// Removed counts objects removed from the store by tag (the tag
	// index); objects hidden by a tag or prefix purge are not counted.
	Removed int `json:"removed_by_tag"`
	// Before: tag and prefix purges hide what was requested from the
	// origin at or before this time.
	Before string `json:"hidden_if_requested_before,omitempty"`
	Error  string `json:"error,omitempty"`
	// Peers: each peer's result, when the purge was sent on (cluster.peers).
	Peers []peerResult `json:"peers,omitempty"`
}

type purgeURL struct {
	URL     string `json:"url"`
	Removed bool   `json:"removed"`
}

// purgeRequest serves an authorised POST /purge. Arguments, in the query
// or an application/x-www-form-urlencoded body, each repeatable:
//
//	url=    absolute URL: remove its object (record and slices)
//	tag=    Surrogate-Key / Cache-Tag value: hide (and, as far as the tag
//	        index knows them, remove) every object carrying it
//	prefix= absolute URL prefix: hide every object whose URL starts with it
//
// The answer is JSON (purgeAnswer). Status: 200; 400 for no argument, too
// many, or a bad one (nothing is purged then); 404 when only url= were
// given and none was cached (as before tags existed; with peers: cached
// on no node); 500 when the purge holds but could not be persisted. With
// Options.Peers, a purge that did not come from a peer (no
// Strata-Purge-Forwarded header) is sent on and "peers" lists the results.
func (a *Admin) purgeRequest(ctx *fasthttp.RequestCtx) {
	urls, tags, prefixes := purgeArgs(ctx, "url"), purgeArgs(ctx, "tag"), purgeArgs(ctx, "prefix")
	var ans purgeAnswer
	n := len(urls) + len(tags) + len(prefixes)
	status := fasthttp.StatusOK
	switch err := a.validatePurge(urls, tags, prefixes); {
	case n == 0:
		status, ans.Error = fasthttp.StatusBadRequest, "proxy: purge: give url=, tag= or prefix="
	case n > maxPurgeArgs:
		status, ans.Error = fasthttp.StatusBadRequest, "proxy: purge: too many arguments"
	case err != nil:
		status, ans.Error = fasthttp.StatusBadRequest, err.Error()
	case a.s.closed.Load():
		// The store may be closing: a purge would remove the memory
		// copy while the disk's tombstone is dropped, and the object
		// would be back after the restart. Refused; the caller retries.
		status, ans.Error = fasthttp.StatusServiceUnavailable, "proxy: purge: shutting down"
	default:
		status, ans = a.doPurge(urls, tags, prefixes)
		if a.peers != nil && len(ctx.Request.Header.Peek(headerPurgeForwarded)) == 0 {
			ans.Peers = a.peers.send(purgeForm(urls, tags, prefixes))
			status = fleetStatus(status, ans.Peers)
		}
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b, _ := json.Marshal(&ans)
	ctx.SetBody(append(b, '\n'))
}

// validatePurge checks every argument before anything is purged.
func (a *Admin) validatePurge(urls, tags, prefixes []string) error {
	var errs []error
	for _, t := range tags {
		if !validTag([]byte(t)) {
			errs = append(errs, ErrPurgeTag)
			break
		}
	}
	for _, u := range urls {
		if _, err := parsePurgeURL(u); err != nil {
			errs = append(errs, err)
			break
		}
	}
	for _, p := range prefixes {
		if _, err := parsePurgeURL(p); err != nil {
			errs = append(errs, ErrPurgePrefix)
			break
		}
	}
	return errors.Join(errs...)
}

func (a *Admin) doPurge(urls, tags, prefixes []string) (int, purgeAnswer) {
	var ans purgeAnswer
	var errs []error
	found := false
	for _, u := range urls {
		ok, err := a.s.purge(u)
		errs = append(errs, err)
		found = found || ok
		ans.URLs = append(ans.URLs, purgeURL{u, ok})
	}
	if len(tags) > 0 {
		n, err := a.s.purgeTags(tags)
		errs = append(errs, err)
		ans.Removed, ans.Tags = n, tags
	}
	for _, p := range prefixes {
		errs = append(errs, a.s.purgePrefix(p))
		ans.Prefixes = append(ans.Prefixes, p)
	}
	if len(tags)+len(prefixes) > 0 {
		ans.Before = a.s.purges.table.latestTime().Format(time.RFC3339Nano)
	}
	if err := errors.Join(errs...); err != nil {
		ans.Error = err.Error()
		return fasthttp.StatusInternalServerError, ans
	}
	if len(tags)+len(prefixes) == 0 && !found {
		return fasthttp.StatusNotFound, ans
	}
	return fasthttp.StatusOK, ans
}

// fleetStatus: a URL purge that found nothing here but removed the
// object on a peer answers 200, as one node holding it would.
func fleetStatus(local int, peers []peerResult) int {
	if local != fasthttp.StatusNotFound {
		return local
	}
	for _, p := range peers {
		if p.Status == fasthttp.StatusOK {
			return fasthttp.StatusOK
		}
	}
	return local
}

// purgeArgs returns the values of name in the query and the form body.
func purgeArgs(ctx *fasthttp.RequestCtx, name string) []string {
	var out []string
	for _, v := range ctx.QueryArgs().PeekMulti(name) {
		out = append(out, string(v))
	}
	for _, v := range ctx.PostArgs().PeekMulti(name) {
		out = append(out, string(v))
	}
	return out
}

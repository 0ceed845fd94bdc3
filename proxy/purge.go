package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// PurgeOptions bound purging by tag and by prefix (see purgeTable and
// tagIndex for the mechanisms).
type PurgeOptions struct {
	// StateFile is where purges by tag and prefix are kept across
	// restarts (written atomically on each purge, loaded by New). Empty:
	// they are kept in memory only, and after a restart objects a purge
	// hid but did not remove from the store come back. Default empty; the
	// binary sets it beside its cache device.
	StateFile string
	// MaxTags is how many purged tags are remembered one by one; older
	// ones fold into a floor that hides every tagged object stored before
	// them. Default 10000.
	MaxTags int
	// MaxPrefixes is how many purged prefixes are remembered one by one;
	// older ones fold into a floor that hides every object stored before
	// them. Default 1000.
	MaxPrefixes int
	// TagIndexBytes caps the tag → object keys index that lets a purge by
	// tag remove objects from the store at once (negative: no index;
	// purges by tag only hide objects). Default 8 MiB.
	TagIndexBytes int
}

// EnsureDefaults fills zero fields with their defaults.
func (o *PurgeOptions) EnsureDefaults() {
	setDefault(&o.MaxTags, 10000)
	setDefault(&o.MaxPrefixes, 1000)
	setDefault(&o.TagIndexBytes, 8<<20)
}

// Validate reports every problem, each wrapped in ErrInvalidOptions.
func (o *PurgeOptions) Validate() error {
	var errs []error
	if o.MaxTags < 1 || o.MaxTags > 1<<20 {
		errs = append(errs, fmt.Errorf("%w: purge.max_tags %d not in [1, 1Mi]", ErrInvalidOptions, o.MaxTags))
	}
	if o.MaxPrefixes < 1 || o.MaxPrefixes > 1<<16 {
		errs = append(errs, fmt.Errorf("%w: purge.max_prefixes %d not in [1, 64Ki]", ErrInvalidOptions, o.MaxPrefixes))
	}
	return errors.Join(errs...)
}

// purges joins the purge table and the tag index of a Server.
type purges struct {
	table *purgeTable
	index *tagIndex
}

func newPurges(o *PurgeOptions, now time.Time) (purges, error) {
	p := purges{
		table: newPurgeTable(o.MaxTags, o.MaxPrefixes, o.StateFile),
		index: newTagIndex(o.TagIndexBytes),
	}
	return p, p.table.load(now.UnixNano())
}

// purged reports whether the decoded record o under object key is hidden
// by a purge by tag or prefix. The lookup calls it before using a record.
func (s *Server) purged(o *object, key []byte) bool {
	return s.purges.table.purged(unixNano(o.RequestTime), key, o.Headers)
}

// recordTags indexes a committed record's tags (fill commit calls it).
func (s *Server) recordTags(key []byte, o *object) { s.purges.index.record(key, o.Headers) }

// purge removes the stored object for rawURL (absolute http or https URL,
// keyed as a GET for it would be), its record and, when the record
// decodes, its slices. It reports whether a record was found. A fill in
// flight for the URL still commits.
func (s *Server) purge(rawURL string) (bool, error) {
	u, err := parsePurgeURL(rawURL)
	if err != nil {
		return false, err
	}
	return s.removeObject(urlKey(u, &s.cfg().Key)), nil
}

// parsePurgeURL parses an absolute http or https URL without fragment.
func parsePurgeURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %q", ErrPurgeURL, raw)
	}
	return u, nil
}

// urlKey is the object key a GET for u would have.
func urlKey(u *url.URL, ko *KeyOptions) []byte {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetHost(u.Host)
	req.Header.SetRequestURI(u.RequestURI())
	return httpcache.BuildKey(nil, []byte(u.Scheme), req, ko)
}

// removeObject (invalidate.go) removes an object: record, slices, and a
// variant index's variants.

// purgeTags hides every stored object whose response carried one of
// tags (Surrogate-Key or Cache-Tag) and was requested from the origin
// before now, and removes from the store those the tag index knows. It
// returns how many objects it removed (the hidden ones are not counted:
// they are not enumerated). The purge is persisted before it returns
// when PurgeOptions.StateFile is set; a write error is logged and
// returned, the purge holds in memory anyway.
func (s *Server) purgeTags(tags []string) (removed int, err error) {
	for _, t := range tags {
		if !validTag([]byte(t)) {
			return 0, fmt.Errorf("%w: %q", ErrPurgeTag, t)
		}
	}
	err = s.purgeSaved(s.purges.table.addTags(s.opts.Now().UnixNano(), tags))
	for _, t := range tags {
		for _, k := range s.purges.index.take(t) {
			if s.removeObject([]byte(k)) {
				removed++
			}
		}
	}
	return removed, err
}

// purgePrefix hides every stored object whose URL starts with rawPrefix
// (absolute http or https URL; the scheme and host must be whole, the path
// may end anywhere: "https://example.com/img/" or "http://example.com")
// and that was requested before now. Objects are hidden, not removed: no
// index of every key is kept; they age out of the store. Persisted as
// purgeTags is.
func (s *Server) purgePrefix(rawPrefix string) error {
	u, err := parsePurgeURL(rawPrefix)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrPurgePrefix, rawPrefix)
	}
	k := urlKey(u, &s.cfg().Key)
	if i := bytes.IndexByte(k, '\n'); i >= 0 {
		k = k[:i] // headers the key options add; a prefix has none
	}
	if u.RawQuery == "" && bytes.HasSuffix(k, []byte("?")) {
		k = k[:len(k)-1]
	}
	return s.purgeSaved(s.purges.table.addPrefix(s.opts.Now().UnixNano(), k))
}

// purgeSaved logs err, a purge's failure to write PurgeOptions.StateFile
// (a full disk, say), once, and returns it: the purge holds in memory but
// is lost on a restart, which the operator must know.
func (s *Server) purgeSaved(err error) error {
	if err != nil {
		s.opts.Logger.Error("proxy: purge not saved: it holds until a restart",
			"state_file", s.opts.Purge.StateFile, "err", err)
	}
	return err
}

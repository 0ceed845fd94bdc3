package proxy

import (
	"bytes"
	"sync"

	"strata/proxy/internal/httpcache"
)

// Surrogate keys (tags). An origin labels a response with tags so that an
// operator can purge every object carrying one: Fastly's Surrogate-Key
// (tags separated by spaces) and Cloudflare's Cache-Tag (separated by
// commas). Both are read from the stored response headers; a response may
// carry either or both, each possibly more than once.
//
// Limits, the same wherever tags are read (indexing at commit, the purge
// check on read, the admin request): a tag is 1..maxTagLen bytes of
// visible ASCII without ',' (longer or odd tokens are ignored, so they can
// never be purged by tag: purge them by URL or prefix), and only the first
// maxTagsPerObject tags of a response count.
const (
	// maxTagLen bounds one tag, in bytes.
	maxTagLen = 256
	// maxTagsPerObject bounds the tags read from one response.
	maxTagsPerObject = 128
)

// forEachTag calls fn with each tag of headers, in order, until fn returns
// false or maxTagsPerObject tags were seen. The tag borrows headers. It
// does not allocate.
func forEachTag(headers []headerKV, fn func(tag []byte) bool) {
	n := 0
	for _, h := range headers {
		sep := tagSeparator(h.Key)
		if sep == 0 {
			continue
		}
		if !splitTags(h.Value, sep, &n, fn) {
			return
		}
	}
}

// tagSeparator returns the byte that separates the tags of a field named
// key (a space in Surrogate-Key, a comma in Cache-Tag), or 0 when the field
// carries no tags. The lengths are compared first: most names are neither.
func tagSeparator(key []byte) byte {
	switch {
	case len(key) == len(httpcache.HeaderSurrogateKey) && bytes.EqualFold(key, httpcache.HeaderSurrogateKey):
		return ' '
	case len(key) == len(httpcache.HeaderCacheTag) && bytes.EqualFold(key, httpcache.HeaderCacheTag):
		return ','
	}
	return 0
}

// hasTagField reports whether headers hold a Surrogate-Key or Cache-Tag
// field: most responses carry neither, and their commits need not take
// the index's lock.
func hasTagField(headers []headerKV) bool {
	for _, h := range headers {
		if tagSeparator(h.Key) != 0 {
			return true
		}
	}
	return false
}

// splitTags splits v at sep (and at spaces and tabs: optional whitespace
// around commas, and tabs between surrogate keys) and calls fn with each
// valid tag. It returns false to stop the caller.
func splitTags(v []byte, sep byte, n *int, fn func([]byte) bool) bool {
	for len(v) > 0 {
		i := 0
		for i < len(v) && v[i] != sep && v[i] != ' ' && v[i] != '\t' {
			i++
		}
		tok := v[:i]
		if i < len(v) {
			v = v[i+1:]
		} else {
			v = nil
		}
		if !validTag(tok) {
			continue
		}
		if *n >= maxTagsPerObject || !fn(tok) {
			return false
		}
		*n++
	}
	return true
}

// validTag reports whether t is 1..maxTagLen visible ASCII bytes other
// than ',' (a comma could not be told apart from Cache-Tag's separator).
func validTag(t []byte) bool {
	if len(t) == 0 || len(t) > maxTagLen {
		return false
	}
	for _, c := range t {
		if c <= ' ' || c >= 0x7f || c == ',' {
			return false
		}
	}
	return true
}

// tagIndex maps a tag to the object keys whose stored responses carried
// it, so that a purge by tag can remove those objects from the store at
// once (on disk durably: Store.Remove writes a tombstone) instead of only
// hiding them (purgeTable, which is what makes purges correct).
//
// Bounded: entries are charged len(tag)+len(key)+tagEntryOverhead bytes;
// when an insert would pass the cap the whole index is dropped and starts
// again (it never sees evictions, so it cannot shrink otherwise). A
// purge may thus miss objects the index forgot, or objects indexed before
// a restart: those are hidden by the purge table and age out of the store.
// Safe for concurrent use; one mutex, taken once per committed tagged
// object and per purge, never on a hit.
type tagIndex struct {
	mu     sync.Mutex
	m      map[string]map[string]struct{}
	bytes  int
	max    int
	resets int
}

const tagEntryOverhead = 64

func newTagIndex(maxBytes int) *tagIndex {
	return &tagIndex{m: make(map[string]map[string]struct{}), max: maxBytes}
}

// record indexes key under every tag of headers. A zero cap disables it.
func (x *tagIndex) record(key []byte, headers []headerKV) {
	if x.max <= 0 || !hasTagField(headers) {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	forEachTag(headers, func(tag []byte) bool {
		set := x.m[string(tag)]
		if _, ok := set[string(key)]; ok {
			return true
		}
		cost := len(tag) + len(key) + tagEntryOverhead
		if x.bytes+cost > x.max {
			clear(x.m)
			x.bytes = 0
			x.resets++
			set = nil
		}
		if set == nil {
			set = make(map[string]struct{})
			x.m[string(tag)] = set
		}
		set[string(key)] = struct{}{}
		x.bytes += cost
		return true
	})
}

// take removes tag from the index and returns the keys it held.
func (x *tagIndex) take(tag string) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	set := x.m[tag]
	delete(x.m, tag)
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
		x.bytes -= len(tag) + len(k) + tagEntryOverhead
	}
	return keys
}

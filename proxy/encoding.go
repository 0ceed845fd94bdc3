package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// normalizeAcceptEncoding rewrites the request's Accept-Encoding to the
// one coding strata will use for this client (br, gzip or identity:
// httpcache.NormalAcceptEncoding) before anything reads it: the cache key's
// Vary part, the request forwarded to the origin, the fill shared with
// other clients. So the spellings of one preference share one stored
// variant and one origin fetch. It allocates nothing once fasthttp's
// header buffers have grown.
func normalizeAcceptEncoding(h *fasthttp.RequestHeader) {
	lines := h.PeekAll(fasthttp.HeaderAcceptEncoding)
	want := httpcache.NormalAcceptEncoding(lines)
	if len(lines) == 1 && bytes.Equal(lines[0], want) {
		return
	}
	if len(lines) > 0 { // absent (most requests from tools): nothing to delete
		h.DelBytes(httpcache.HeaderAcceptEncoding)
	}
	// The name is canonical: SetBytesKV would only copy it first.
	h.SetCanonical(httpcache.HeaderAcceptEncoding, want)
}

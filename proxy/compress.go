package proxy

import (
	"bytes"
	"io"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// Compression at the edge. A compressible response the origin sends
// uncompressed, and without Vary, is stored three times over, once per
// coding a client's normalised Accept-Encoding can name (encoding.go): as
// received under "identity", and compressed once, just after the fill
// commits (compressLater: off the request path, at most compressSlots at a
// time), under "gzip" and "br". The three are ordinary variants
// (variants.go) under an index that varies on Accept-Encoding, written in
// place of the record the fill committed under the URL's key; until then
// that record answers everyone, uncompressed. A hit then serves stored
// bytes whatever the coding: compression costs CPU once per object, never
// per request, and one origin fetch serves every client. The clients of
// the fill itself get the identity response as it streams.
//
// Which responses (compressible, then checked again at commit):
//   - status 200, stored, no Content-Encoding (or "identity"): a body
//     the origin compressed is never compressed again;
//   - no Vary from the origin (a response that varies already is stored
//     as its variants, as the origin made them);
//   - no no-transform (RFC 9110 §7.7: a proxy must not change the
//     content coding then) in Cache-Control or in the field that gave
//     strata's policy;
//   - a Content-Type in CompressOptions.Types;
//   - a body from MinSize up to MaxSize. One longer than a slice is
//     compressed as a stream into sliced representations
//     (compress_sliced.go);
//   - MaxVariants of at least 3 (the three representations).
//
// Each compressed representation is its own: Content-Encoding set, its
// length from its bytes (ranges are served from those bytes, RFC 9110
// §14.1.2), and its own entity tag, W/"<origin tag>-gz" or -br: weak,
// because a later recompression (another library version) may give other
// bytes for the same tag, and so If-Range never matches it (a range
// request with If-Range gets the whole representation; nor does an
// If-Range date, the identity's Last-Modified, which it shares). Revalidating it
// with the origin sends that tag, which the origin does not know: the
// answer is a new 200, compressed again. Content-MD5, Digest,
// Content-Digest and Repr-Digest are dropped (they would describe the
// identity bytes: RFC 9530 §2, §3 and RFC 3230 digest the content coding's
// output). A coding that saves less than a tenth of
// the body is not worth its CPU on the client: its variant then holds the
// identity bytes (no Content-Encoding), so such a client still hits. All
// three carry Vary: Accept-Encoding, so caches downstream vary too. A
// compressed representation's record is marked edge-coded: its bytes are
// not the origin's, so none of them is ever fetched from the origin.
//
// The index is written only if the URL's key still holds the record the
// fill committed (same generation): a purge or a newer fill in between
// wins, and the variants just written are orphans that age out.

// CompressOptions configure compression at the edge.
type CompressOptions struct {
	// Disable turns compression at the edge off: responses are stored as
	// the origin sent them. Default false (on, as at CDNs).
	Disable bool
	// Types are the compressible media types: "type/subtype" or "type/*",
	// compared case-insensitively with the Content-Type's media type.
	// Default DefaultCompressTypes.
	Types []string
	// MinSize: bodies shorter than this are not compressed. Default 1 KiB
	// (below it headers dominate and the saving is small).
	MinSize int
	// MaxSize: bodies longer than this are not compressed. Default
	// DefaultCompressMaxSize, 8 MiB: br-6 compresses 8-65 MB/s of text
	// per core (Go source the slowest of those measured, JSON the
	// fastest), so such a body costs up to about a second of one core,
	// once. A body longer than a slice is compressed as a stream
	// (compress_sliced.go): its memory does not grow with its length,
	// its CPU time does, and it holds a compression slot that long.
	MaxSize int64
	// GzipLevel (1..9) and BrotliQuality (0..11). Defaults 6 and 6: once
	// per object, near the best ratio for the CPU.
	GzipLevel     int
	BrotliQuality int
}

// Defaults of CompressOptions.
const (
	DefaultCompressMinSize       = 1 << 10
	DefaultCompressMaxSize       = 8 << 20
	DefaultCompressGzipLevel     = 6
	DefaultCompressBrotliQuality = 6
	maxCompressMaxSize           = 1 << 30
)

// DefaultCompressTypes are the media types compressed by default: text,
// JSON, JavaScript, XML, SVG, WebAssembly, and fonts not compressed by
// their format.
var DefaultCompressTypes = []string{
	"text/*", "application/json", "application/javascript", "application/x-javascript",
	"application/xml", "application/xhtml+xml", "application/rss+xml", "application/atom+xml",
	"application/ld+json", "application/manifest+json", "application/geo+json", "application/wasm",
	"image/svg+xml", "image/x-icon", "font/ttf", "font/otf", "application/vnd.ms-fontobject",
}

// EnsureDefaults fills zero fields with their defaults.
func (o *CompressOptions) EnsureDefaults() {
	if o.Types == nil {
		o.Types = DefaultCompressTypes
	}
	setDefault(&o.MinSize, DefaultCompressMinSize)
	setDefault(&o.MaxSize, DefaultCompressMaxSize)
	setDefault(&o.GzipLevel, DefaultCompressGzipLevel)
	setDefault(&o.BrotliQuality, DefaultCompressBrotliQuality)
}

// validate appends every problem to errs.
func (o *CompressOptions) validate(bad func(format string, args ...any)) {
	if o.MinSize < 0 {
		bad("compress min_size %d < 0", o.MinSize)
	}
	if o.MaxSize < 0 || o.MaxSize > maxCompressMaxSize {
		bad("compress max_size %d not in [0, 1GiB]", o.MaxSize)
	}
	if o.GzipLevel < 1 || o.GzipLevel > 9 {
		bad("compress gzip_level %d not in [1, 9]", o.GzipLevel)
	}
	if o.BrotliQuality < 0 || o.BrotliQuality > 11 {
		bad("compress brotli_quality %d not in [0, 11]", o.BrotliQuality)
	}
	for _, t := range o.Types {
		if a, b, ok := strings.Cut(t, "/"); !ok || a == "" || b == "" || strings.ContainsAny(t, " ;,") {
			bad("compress type %q: want type/subtype or type/*", t)
		}
	}
}

// edgeCodings are the codings strata stores, identity first, with their
// entity-tag suffix.
var edgeCodings = [...]struct {
	name   []byte
	suffix string
}{{httpcache.AcceptIdentity, ""}, {httpcache.AcceptGzip, "-gz"}, {httpcache.AcceptBr, "-br"}}

var (
	headerContentEncoding = []byte("Content-Encoding")
	headerVary            = []byte(fasthttp.HeaderVary)
)

// compressible reports whether a response with headers h, stored per si
// under the URL's own key (no Vary), with declared length cl (<0:
// unknown), is one to compress when its fill commits (see above).
func (s *Server) compressible(h *fasthttp.ResponseHeader, si *httpcache.StoreInfo, cl int64) bool {
	o := &s.opts.Compress
	if o.Disable || !si.Store || h.StatusCode() != fasthttp.StatusOK || s.cfg().MaxVariants < len(edgeCodings) ||
		(cl >= 0 && (cl < int64(max(o.MinSize, 1)) || cl > o.MaxSize)) {
		return false
	}
	// The media type first: it is a field fasthttp keeps apart, and most
	// responses that reach here are not compressible by type; each check
	// below walks the header fields (NoTransform parses Cache-Control).
	if si.CC.NoTransform || !compressType(o.Types, h.ContentType()) {
		return false
	}
	if ce := h.PeekBytes(headerContentEncoding); len(ce) > 0 && !bytes.EqualFold(bytes.TrimSpace(ce), httpcache.AcceptIdentity) {
		return false
	}
	if len(h.PeekAll(fasthttp.HeaderVary)) > 0 {
		return false
	}
	return !httpcache.NoTransform(h)
}

// compressType reports whether the Content-Type ct names one of types.
func compressType(types []string, ct []byte) bool {
	mt, _, _ := bytes.Cut(ct, []byte(";"))
	mt = bytes.TrimSpace(mt)
	// An ASCII mt equals under bytes.EqualFold only a type at least as
	// long: a rune that folds to an ASCII letter is ASCII or longer (the
	// Kelvin sign, the long s). Most types are skipped by length alone;
	// comparing each cost a miss more than the rest of the check.
	short := asciiBytes(mt)
	for _, t := range types {
		if p, ok := strings.CutSuffix(t, "/*"); ok {
			if len(mt) > len(p) && mt[len(p)] == '/' && bytes.EqualFold(mt[:len(p)], []byte(p)) {
				return true
			}
		} else if (!short || len(t) >= len(mt)) && bytes.EqualFold(mt, []byte(t)) {
			return true
		}
	}
	return false
}

// asciiBytes reports whether every byte of b is ASCII.
func asciiBytes(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// compressJob is one body to compress: a copy of the committed record
// (its Headers and Digests borrow the fill's buffers, which nothing
// reuses) with its own copy of the body when that is inline (a sliced
// body is read back from the store: compress_sliced.go).
type compressJob struct {
	obj    object
	pkey   []byte
	expiry time.Time
}

// compressLater hands the body f just committed under the URL's key to a
// compression goroutine, so that neither the fill's clients nor (for a
// small body read on the leader's goroutine) its leader wait for it. At
// most compressSlots run at once, at most one of them on a sliced body;
// a body that finds none free is left uncompressed (counted): it is
// served as the origin sent it until it is fetched again. The goroutines
// are the Server's (Close waits for them).
func (s *Server) compressLater(f *fill) {
	n := f.obj.BodyLen
	if n < int64(max(s.opts.Compress.MinSize, 1)) || n > s.opts.Compress.MaxSize || s.life.Err() != nil {
		return
	}
	if bytes.IndexByte(f.rv.pkey, 0) >= 0 {
		// A variant's key (variants.go: a primary key holds no 0x00): a
		// fill that took a variant's key for its primary one (a slice
		// fetch answered 200) must not put an index there, which lookups
		// would read as a damaged record.
		return
	}
	sliced := !f.obj.inline()
	if !s.cz.acquire(sliced) {
		s.cz.skipped.Inc()
		return
	}
	// The job gets its own copy of the object (re-encoded and decoded:
	// one buffer for headers, digests and inline body) and of the primary
	// key, so the fill is recycled as usual once released (fill_pool.go).
	j := &compressJob{pkey: append([]byte(nil), f.rv.pkey...), expiry: f.expiry}
	if err := decodeObject(&j.obj, appendObject(nil, &f.obj)); err != nil {
		s.cz.release(sliced) // not reached: the object's own encoding
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.cz.release(sliced)
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("proxy: compression panicked", "panic", p, "stack", string(debug.Stack()))
				s.cz.panics.Inc()
			}
		}()
		if sliced {
			s.storeCompressedSliced(j)
		} else {
			s.storeCompressed(j)
		}
	}()
}

// storeCompressed stores the three representations of j's body and the
// index that leads to them, in place of j's record under the URL's key
// (see above).
func (s *Server) storeCompressed(j *compressJob) {
	body := j.obj.Body
	x := variantIndex{Epoch: rand.Uint64(), Vary: httpcache.HeaderAcceptEncoding}
	idHeaders := varyHeaders(j.obj.Headers)
	for i, c := range edgeCodings {
		if s.life.Err() != nil {
			return // closing: leave the identity record as it is
		}
		vk := edgeVaryKey(c.name)
		o := j.obj
		o.Gen = rand.Uint64()
		o.Vary, o.VariantKey, o.Headers = x.Vary, vk, idHeaders
		if i > 0 {
			z := s.cz.compress(c.name, body)
			if len(z) <= len(body)-len(body)/10 {
				o.Body, o.BodyLen, o.EdgeCoded = z, int64(len(z)), true
				o.Headers, o.ETag = compressedHeaders(idHeaders, c.name, c.suffix)
			}
			s.cz.count(i, int64(len(body)), o.BodyLen)
		}
		key := variantKey(nil, j.pkey, x.Epoch, vk)
		s.store.Insert(metaKey(nil, key), appendObject(nil, &o), j.expiry)
		s.recordTags(key, &o)
		x.Keys = append(x.Keys, vk)
	}
	s.publishEdgeIndex(j, &x)
}

// varyHeaders returns the identity's stored headers plus Vary:
// Accept-Encoding (a new array: hs is shared).
func varyHeaders(hs []headerKV) []headerKV {
	return append(hs[:len(hs):len(hs)],
		headerKV{Key: appendCanonicalName(nil, headerVary), Value: httpcache.HeaderAcceptEncoding})
}

// edgeVaryKey is the secondary key of the variant for coding.
func edgeVaryKey(coding []byte) []byte {
	var req fasthttp.RequestHeader
	req.SetBytesKV(httpcache.HeaderAcceptEncoding, coding)
	vk, _ := httpcache.VaryKey(nil, httpcache.HeaderAcceptEncoding, &req) // a token: always ok
	return vk
}

// publishEdgeIndex writes the index x in place of j's record under the
// URL's key, if that key still holds it (same generation): a purge or a
// newer fill in between wins, and the variants just written, which
// nothing can reach, are removed.
func (s *Server) publishEdgeIndex(j *compressJob, x *variantIndex) {
	m := s.vlocks.lock(j.pkey)
	defer m.Unlock()
	mkey := metaKey(nil, j.pkey)
	var cur object
	if v, _, ok := s.store.Get(mkey, nil); !ok || isVariantIndex(v) || decodeObject(&cur, v) != nil || cur.Gen != j.obj.Gen {
		for _, vk := range x.Keys { // purged or replaced since the commit
			s.removeObjectLocked(variantKey(nil, j.pkey, x.Epoch, vk))
		}
		return
	}
	s.store.Insert(mkey, appendVariantIndex(nil, x), j.expiry)
}

// compressedHeaders returns the stored headers of a representation in
// coding: the identity's, less ETag and the digests of the identity bytes
// (identityDigest), plus Content-Encoding
// and the representation's own weak ETag (none when the origin sent none
// or a malformed one), which it also returns.
func compressedHeaders(id []headerKV, coding []byte, suffix string) ([]headerKV, []byte) {
	out := make([]headerKV, 0, len(id)+2)
	var etag []byte
	for _, kv := range id {
		switch {
		case bytes.EqualFold(kv.Key, []byte(fasthttp.HeaderETag)):
			etag = weakTagWith(kv.Value, suffix)
		case identityDigest(kv.Key):
		default:
			out = append(out, kv)
		}
	}
	out = append(out, headerKV{Key: headerContentEncoding, Value: coding})
	if etag != nil {
		out = append(out, headerKV{Key: appendCanonicalName(nil, []byte(fasthttp.HeaderETag)), Value: etag})
	}
	return out, etag
}

// identityDigest reports whether the stored field name is a digest of the
// identity bytes, wrong for any other coding of them.
func identityDigest(name []byte) bool {
	for _, d := range [...]string{"Content-MD5", "Digest", "Content-Digest", "Repr-Digest"} {
		if bytes.EqualFold(name, []byte(d)) {
			return true
		}
	}
	return false
}

// weakTagWith turns the entity tag t ("x" or W/"x") into W/"x<suffix>",
// or nil when t is not an entity tag.
func weakTagWith(t []byte, suffix string) []byte {
	t = bytes.TrimPrefix(bytes.TrimSpace(t), []byte("W/"))
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' || bytes.IndexByte(t[1:len(t)-1], '"') >= 0 {
		return nil
	}
	out := append([]byte(`W/`), t[:len(t)-1]...)
	return append(append(out, suffix...), '"')
}

// compressSlots bounds the compressions running at once: each holds a
// body (or, sliced, three slices), its compressed copies and pooled
// writers, and takes a CPU. At most one of them compresses a sliced body,
// which takes longer (compress_sliced.go), so that small bodies always
// find a slot free of those.
const compressSlots = 2

// compressor makes the compressed representations: pooled writers (a
// brotli writer holds about a megabyte of tables, a gzip writer several
// hundred kilobytes; each is reset per body and keeps the Server's level)
// and the metrics. Safe for concurrent use.
type compressor struct {
	opts      *CompressOptions
	slots     chan struct{} // compressions running (compressLater)
	sliced    chan struct{} // of those, on a sliced body (capacity 1)
	skipped   prometheus.Counter
	abandoned prometheus.Counter
	panics    prometheus.Counter
	gzip      sync.Pool                                // *gzip.Writer
	brotli    sync.Pool                                // *brotli.Writer
	objects   [len(edgeCodings) - 1]prometheus.Counter // by edgeCodings[1:]
	bytesIn   [len(edgeCodings) - 1]prometheus.Counter
	bytesOut  [len(edgeCodings) - 1]prometheus.Counter
}

func (c *compressor) init(o *CompressOptions, reg prometheus.Registerer) error {
	c.opts = o
	c.slots = make(chan struct{}, compressSlots)
	c.sliced = make(chan struct{}, 1)
	c.skipped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_edge_compress_skipped_total",
		Help: "Bodies left uncompressed because compressSlots compressions (or one of a sliced body) were already running.",
	})
	c.abandoned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_edge_compress_abandoned_total",
		Help: "Sliced bodies left uncompressed after reading began: a slice gone from the store or replaced, a coding that did not pay, a representation the store dropped.",
	})
	c.panics = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_edge_compress_panics_total",
		Help: "Compressions that panicked (logged with their stack); the identity record stays.",
	})
	objects := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_edge_compressed_total",
		Help: "Representations compressed at the edge when stored, by coding (once per object).",
	}, []string{"coding"})
	in := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_edge_compress_input_bytes_total",
		Help: "Identity bytes compressed at the edge, by coding.",
	}, []string{"coding"})
	out := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_edge_compress_output_bytes_total",
		Help: "Bytes stored for the representations compressed at the edge, by coding (identity bytes where the coding did not pay).",
	}, []string{"coding"})
	for i, e := range edgeCodings[1:] {
		c.objects[i] = objects.WithLabelValues(string(e.name))
		c.bytesIn[i] = in.WithLabelValues(string(e.name))
		c.bytesOut[i] = out.WithLabelValues(string(e.name))
	}
	if reg == nil {
		return nil
	}
	for _, m := range []prometheus.Collector{objects, in, out, c.skipped, c.abandoned, c.panics} {
		if err := reg.Register(m); err != nil {
			return err
		}
	}
	return nil
}

// acquire takes a compression slot (and, for a sliced body, the sliced
// one) without waiting; false when none is free.
func (c *compressor) acquire(sliced bool) bool {
	select {
	case c.slots <- struct{}{}:
	default:
		return false
	}
	if !sliced {
		return true
	}
	select {
	case c.sliced <- struct{}{}:
		return true
	default:
		<-c.slots
		return false
	}
}

// release gives back what acquire took.
func (c *compressor) release(sliced bool) {
	if sliced {
		<-c.sliced
	}
	<-c.slots
}

// count adds one representation of edgeCodings[i] made from in identity
// bytes into out stored bytes to the metrics.
func (c *compressor) count(i int, in, out int64) {
	c.objects[i-1].Inc()
	c.bytesIn[i-1].Add(float64(in))
	c.bytesOut[i-1].Add(float64(out))
}

// compress returns body compressed with coding (gzip or br).
func (c *compressor) compress(coding, body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body)/3 + 64)
	w := c.writer(coding, &buf)
	_, _ = w.Write(body) // a bytes.Buffer does not fail
	_ = w.Close()
	c.put(w)
	return buf.Bytes()
}

// writer returns a pooled writer of coding (gzip or br) onto dst. The
// caller closes it and hands it back with put.
func (c *compressor) writer(coding []byte, dst io.Writer) io.WriteCloser {
	if bytes.Equal(coding, httpcache.AcceptGzip) {
		if w, ok := c.gzip.Get().(*gzip.Writer); ok {
			w.Reset(dst)
			return w
		}
		w, _ := gzip.NewWriterLevel(dst, c.opts.GzipLevel) // level validated
		return w
	}
	if w, ok := c.brotli.Get().(*brotli.Writer); ok {
		w.Reset(dst)
		return w
	}
	return brotli.NewWriterLevel(dst, c.opts.BrotliQuality)
}

// put returns a closed writer to its pool, pointed at io.Discard so that
// the pool does not keep its last destination alive.
func (c *compressor) put(w io.WriteCloser) {
	switch w := w.(type) {
	case *gzip.Writer:
		w.Reset(io.Discard)
		c.gzip.Put(w)
	case *brotli.Writer:
		w.Reset(io.Discard)
		c.brotli.Put(w)
	}
}

package proxy

import (
	"bufio"
	"bytes"
	"strata/proxy/internal/httpcache"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Header names, prebuilt so that the hot paths do not convert strings.
var (
	hdrAge                 = []byte("Age")
	hdrAltSvc              = []byte("Alt-Svc")
	hdrCacheStatus         = []byte("Cache-Status")
	hdrConnection          = []byte("Connection")
	hdrContentLength       = []byte("Content-Length")
	hdrDate                = []byte("Date")
	hdrSurrogateCapability = []byte(httpcache.HeaderSurrogateCapability)
	hdrSurrogateControl    = []byte(httpcache.HeaderSurrogateControl)
	hdrKeepAlive           = []byte("Keep-Alive")
	hdrProxyPrefix         = []byte("Proxy-")
	hdrTE                  = []byte("TE")
	hdrTrailer             = []byte("Trailer")
	hdrTransferEncoding    = []byte("Transfer-Encoding")
	hdrUpgrade             = []byte("Upgrade")
	hdrVia                 = []byte("Via")
	hdrXForwardedFor       = []byte("X-Forwarded-For")
	hdrXForwardedHost      = []byte("X-Forwarded-Host")
	hdrXForwardedProto     = []byte("X-Forwarded-Proto")

	// Request headers a shared fill must not forward: the fill answers
	// many clients, so it asks for the whole, unconditional representation
	// (issue 6 answers conditionals and ranges from the stored object).
	fillDropped = [][]byte{
		[]byte("If-None-Match"), []byte("If-Modified-Since"), []byte("If-Match"),
		[]byte("If-Unmodified-Since"), []byte("If-Range"), []byte("Range"),
	}
)

// hopByHop reports whether the header named key must not be forwarded
// (RFC 9110 §7.6.1): the fixed hop-by-hop set, any Proxy-* header, and
// every name listed in the message's Connection header (conn).
func hopByHop(key, conn []byte) bool {
	switch {
	case bytes.EqualFold(key, hdrConnection), bytes.EqualFold(key, hdrKeepAlive),
		bytes.EqualFold(key, hdrTE), bytes.EqualFold(key, hdrTrailer),
		bytes.EqualFold(key, hdrTransferEncoding), bytes.EqualFold(key, hdrUpgrade):
		return true
	case len(key) >= len(hdrProxyPrefix) && bytes.EqualFold(key[:len(hdrProxyPrefix)], hdrProxyPrefix):
		return true
	}
	return listed(conn, key)
}

// listed reports whether the comma-separated token list contains name.
func listed(list, name []byte) bool {
	for len(list) > 0 {
		var tok []byte
		if i := bytes.IndexByte(list, ','); i >= 0 {
			tok, list = list[:i], list[i+1:]
		} else {
			tok, list = list, nil
		}
		if bytes.EqualFold(bytes.TrimSpace(tok), name) {
			return true
		}
	}
	return false
}

// storedHeader reports whether an origin response header is kept in a
// stored record (and forwarded on a miss): end-to-end headers except the
// framing (Content-Length, set from the body), Age (recomputed), and
// Alt-Svc (a statement about the origin's connection, not the resource).
func storedHeader(key, conn []byte) bool {
	return !hopByHop(key, conn) && !bytes.EqualFold(key, hdrContentLength) &&
		!bytes.EqualFold(key, hdrAge) && !bytes.EqualFold(key, hdrAltSvc)
}

// connectionValue returns the Connection header's token list of h, or nil.
func connectionValue(h *fasthttp.ResponseHeader) []byte {
	return h.PeekBytes(hdrConnection)
}

// copyResponseHeaders appends the end-to-end headers of src to kvs, with
// the names and values copied into buf; it returns both grown.
func copyResponseHeaders(kvs []headerKV, buf []byte, src *fasthttp.ResponseHeader) ([]headerKV, []byte) {
	conn := connectionValue(src)
	type span struct{ k0, k1, v0, v1 int }
	spans := make([]span, 0, 16)
	for k, v := range src.All() {
		if !storedHeader(k, conn) || len(spans) >= maxStoredHeader {
			continue
		}
		sp := span{k0: len(buf)}
		buf = append(buf, k...)
		sp.k1, sp.v0 = len(buf), len(buf)
		buf = append(buf, v...)
		sp.v1 = len(buf)
		spans = append(spans, sp)
	}
	for _, sp := range spans {
		kvs = append(kvs, headerKV{Key: buf[sp.k0:sp.k1:sp.k1], Value: buf[sp.v0:sp.v1:sp.v1]})
	}
	return kvs, buf
}

// prepareOriginRequest turns dst (a copy of the client's request) into
// the request sent to o: hop-by-hop headers stripped, Host set per
// o.HostHeader, X-Forwarded-* and Via added.
func (s *Server) prepareOriginRequest(dst *fasthttp.Request, ctx *fasthttp.RequestCtx, o *origin) {
	h := &dst.Header
	conn := h.PeekBytes(hdrConnection)
	var drop [][]byte
	for k := range h.All() {
		if hopByHop(k, conn) {
			drop = append(drop, append([]byte(nil), k...))
		}
	}
	for _, k := range drop {
		h.DelBytes(k)
	}
	h.ResetConnectionClose()
	clientHost := ctx.Request.Header.Host()
	h.SetBytesKV(hdrXForwardedHost, clientHost)
	if ctx.IsTLS() {
		h.SetBytesKV(hdrXForwardedProto, []byte("https"))
	} else {
		h.SetBytesKV(hdrXForwardedProto, []byte("http"))
	}
	ip := ctx.RemoteIP().String()
	if prior := h.PeekBytes(hdrXForwardedFor); len(prior) > 0 {
		h.SetBytesKV(hdrXForwardedFor, append(append(append([]byte(nil), prior...), ", "...), ip...))
	} else {
		h.SetBytesKV(hdrXForwardedFor, []byte(ip))
	}
	h.AddBytesKV(hdrVia, s.via)
	if sc := s.opts.Policy.SurrogateCapability(); !s.opts.Policy.IgnoreSurrogateControl && len(sc) > 0 {
		h.AddBytesKV(hdrSurrogateCapability, sc)
	}
	if o.opts.HostHeader == HostOrigin {
		h.SetHostBytes(o.hostHeader)
	}
	dst.SetRequestURIBytes(ctx.Request.Header.RequestURI())
	dst.URI().SetSchemeBytes(o.scheme)
	dst.URI().SetHostBytes(o.addr)
	dst.UseHostHeader = true
}

// writeHeaders sets the stored end-to-end headers on the client response,
// the stored Date included (installDate).
// REQUIRES: dst holds nothing but a status code yet.
func writeHeaders(dst *fasthttp.ResponseHeader, kvs []headerKV) {
	installDate(dst, storedDate(kvs))
	for _, kv := range kvs {
		dst.AddBytesKV(kv.Key, kv.Value)
	}
}

// Date handling. fasthttp manages Date itself: Set/Add of "Date" on a
// ResponseHeader are ignored, and unless NoDefaultDate is set it writes
// the time of sending and drops any Date field. That would give every hit
// a new Date, but a cache serves the stored response with its Date (RFC
// 9111 §4; RFC 9110 §6.6.1: Date is when the origin generated it, and a
// downstream cache computes the apparent age from it, §4.2.3). So the
// server runs with NoDefaultDate and each response gets its Date from
// installDate, the one way into fasthttp's field list that parsing offers:
// it parses a header block holding just the Date. Responses that go
// through Response.Reset (the proxy's own errors) get fasthttp's default
// Date again, which is right for them.

// dateReader is the pooled scratch of installDate.
type dateReader struct {
	buf []byte
	rd  bytes.Reader
	br  *bufio.Reader
}

var dateReaders = sync.Pool{New: func() any {
	d := &dateReader{buf: make([]byte, 0, 128)}
	d.br = bufio.NewReaderSize(&d.rd, 256)
	return d
}}

// maxDateLen bounds a Date value installDate copies (an HTTP-date is 29
// bytes; the obsolete formats are shorter than 40).
const maxDateLen = 64

// installDate gives h the Date field date, or the current time when date
// is empty or unusable (RFC 9110 §6.6.1: a recipient that forwards a
// response without Date must add one). It keeps h's status code.
// REQUIRES: h holds nothing but a status code yet (it is reset).
// Allocates nothing once the pool is warm.
func installDate(h *fasthttp.ResponseHeader, date []byte) {
	if len(date) == 0 || len(date) > maxDateLen || bytes.ContainsAny(date, "\r\n") {
		date = nil
	}
	status := h.StatusCode()
	d := dateReaders.Get().(*dateReader)
	b := append(d.buf[:0], "HTTP/1.1 200 OK\r\nDate: "...)
	if date != nil {
		b = append(b, date...)
	} else {
		b = fasthttp.AppendHTTPDate(b, time.Now())
	}
	b = append(b, "\r\n\r\n"...)
	d.buf = b
	d.rd.Reset(b)
	d.br.Reset(&d.rd)
	err := h.Read(d.br)
	dateReaders.Put(d)
	if err != nil { // cannot happen: the block is well-formed
		h.Reset()
	}
	h.SetProtocol(nil)
	h.SetStatusMessage(nil)
	h.SetContentLength(-2) // none yet: the body sets it
	h.SetStatusCode(status)
	// A parsed header without a length reads as "body until close"; this
	// one is not: keep-alive is the server's decision (it was lost on
	// every response, halving hit throughput).
	h.ResetConnectionClose()
}

// storedDate returns the value of the Date field among kvs, or nil.
func storedDate(kvs []headerKV) []byte {
	for _, kv := range kvs {
		if bytes.EqualFold(kv.Key, hdrDate) {
			return kv.Value
		}
	}
	return nil
}

// consumeSurrogate removes Surrogate-Control from an origin response once
// httpcache.StoreDecision has read it: it is addressed to surrogates, and strata is
// the one that acts on it (surrogate.go). Kept when IgnoreSurrogateControl.
func (s *Server) consumeSurrogate(h *fasthttp.ResponseHeader) {
	if !s.opts.Policy.IgnoreSurrogateControl {
		h.DelBytes(hdrSurrogateControl)
	}
}

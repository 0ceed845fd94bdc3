package proxy

import (
	"bufio"
	"bytes"
	"hash/maphash"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// fillDropped are the request headers a shared fill must not forward: the
// fill answers many clients, so it asks for the whole, unconditional
// representation; each client's conditionals and ranges are answered
// from the stored object.
var fillDropped = [][]byte{
	httpcache.HeaderIfNoneMatch, httpcache.HeaderIfModifiedSince, httpcache.HeaderIfMatch,
	httpcache.HeaderIfUnmodifiedSince, httpcache.HeaderIfRange, httpcache.HeaderRange,
}

// prepareFillRequest sets dst to the request a shared fill sends o for
// the client's request in ctx: the client's header as a GET, without
// fillDropped's fields and without Content-Length, then made ready for o
// (prepareOriginRequest).
//
// The header is copied whole and the few fields a fill must not send are
// deleted after: CopyTo appends field after field without normalising
// anything, cheaper than adding the kept ones one by one, and most
// requests carry none of fillDropped's. prepareOriginRequest's walk over
// the fields, which finds the hop-by-hop ones, finds fillDropped's too,
// so they cost no walk of their own, and each DelBytes (which copies and
// normalises its name and walks every field) runs only for a field that
// is there. The names compare as DelBytes compares them: byte for byte
// with the stored ones, which the server has normalised as fillDropped's
// are.
func (s *Server) prepareFillRequest(dst *fasthttp.Request, ctx *fasthttp.RequestCtx, o *origin) {
	h := &dst.Header
	ctx.Request.Header.CopyTo(h)
	h.DelBytes(httpcache.HeaderContentLength)
	h.SetMethod(fasthttp.MethodGet)
	s.prepareOriginRequestDropping(dst, ctx, o, fillDropped)
}

// droppedName returns the one of names that k is, byte for byte, or nil.
func droppedName(k []byte, names [][]byte) []byte {
	for _, name := range names {
		if string(k) == string(name) {
			return name
		}
	}
	return nil
}

// connectionValue returns the Connection header's token list of h, or nil.
// The name is canonical (TestOriginRequestNamesCanonical): PeekBytes would
// only copy it.
func connectionValue(h *fasthttp.ResponseHeader) []byte {
	return h.PeekCanonical(httpcache.HeaderConnection)
}

// dateLine starts the Date line a fill adds to a response without one.
const dateLine = "Date: "

// httpDateLen is the length of an IMF-fixdate (RFC 9110 §5.6.7).
const httpDateLen = len("Mon, 02 Jan 2006 15:04:05 GMT")

// copyResponseHeaders returns the end-to-end headers of src, with the
// names (in canonical case, appendCanonicalName) and values copied into
// one buffer, also returned. Both are allocated once, at their final size:
// kvs with room for one more field, buf for extra more bytes (what a
// caller adds: a Date, an ETag).
func copyResponseHeaders(src *fasthttp.ResponseHeader, extra int) ([]headerKV, []byte) {
	return appendResponseHeaders(nil, nil, src, extra)
}

// appendResponseHeaders is copyResponseHeaders into kvs and buf (both
// empty) when their capacities suffice, as a recycled fill's do.
func appendResponseHeaders(kvs []headerKV, buf []byte, src *fasthttp.ResponseHeader, extra int) ([]headerKV, []byte) {
	conn := connectionValue(src)
	n, size := 0, extra
	for k, v := range src.All() {
		if httpcache.StoredField(k, conn) && n < maxStoredHeader {
			n, size = n+1, size+len(k)+len(v)
		}
	}
	if cap(kvs) < n+1 {
		kvs = make([]headerKV, 0, n+1)
	}
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	for k, v := range src.All() {
		if !httpcache.StoredField(k, conn) || len(kvs) >= maxStoredHeader {
			continue
		}
		k0 := len(buf)
		buf = appendCanonicalName(buf, k)
		v0 := len(buf)
		buf = append(buf, v...)
		kvs = append(kvs, headerKV{Key: buf[k0:v0:v0], Value: buf[v0:len(buf):len(buf)]})
	}
	return kvs, buf
}

// appendStoredLines appends the end-to-end fields of src (at most
// maxStoredFields: one fewer than copyResponseHeaders keeps, for the Date
// a fill adds to a response without one) to buf as the lines
// of a record's header block, "Name: value\r\n" with the name in
// canonical case (object_headers.go), and to kvs a view of each name and
// value within its line. It walks src once: the lines are the stored
// copy, and a fill's record takes them as its header block without
// encoding them again (appendObjectHeadBlock). extra is the room left in
// buf after the lines (what a caller adds without moving them: a Date
// line, an ETag). ok is false when a field cannot be written as a line
// (wireField): the lines are then not the block appendHeaderBlock would
// write for kvs, and the record must be encoded from kvs.
func appendStoredLines(kvs []headerKV, buf []byte, src *fasthttp.ResponseHeader, extra int) (_ []headerKV, _ []byte, ok bool) {
	conn := connectionValue(src)
	start, first := len(buf), len(kvs)
	ok = true
	for k, v := range src.All() {
		if len(kvs)-first >= maxStoredFields || !httpcache.StoredField(k, conn) {
			continue
		}
		k0 := len(buf)
		var wire bool
		buf, wire = appendWireName(buf, k)
		k1 := len(buf)
		buf = append(append(buf, ": "...), v...)
		kv := headerKV{Key: buf[k0:k1:k1], Value: buf[k1+2 : len(buf) : len(buf)]}
		buf = append(buf, "\r\n"...)
		ok = ok && wire && wireValue(v)
		kvs = append(kvs, kv)
	}
	if cap(buf)-len(buf) < extra {
		buf = append(make([]byte, 0, len(buf)+extra), buf...)
	}
	// Point every view into buf's final array: appends may have moved it.
	off := start
	for i := first; i < len(kvs); i++ {
		kv := &kvs[i]
		nk, nv := len(kv.Key), len(kv.Value)
		kv.Key = buf[off : off+nk : off+nk]
		off += nk + 2
		kv.Value = buf[off : off+nv : off+nv]
		off += nv + 2
	}
	return kvs, buf, ok
}

// prepareOriginRequest turns dst (a copy of the client's request) into
// the request sent to o: hop-by-hop headers stripped, Host set per
// o.HostHeader, X-Forwarded-*, Via and CDN-Loop added. The fields it
// looks up and sets by name go through fasthttp's Canonical calls, which
// skip copying and normalising the name: those names are canonical
// already (TestOriginRequestNamesCanonical), and for a canonical name
// PeekBytes and SetBytesKV do nothing else.
func (s *Server) prepareOriginRequest(dst *fasthttp.Request, ctx *fasthttp.RequestCtx, o *origin) {
	s.prepareOriginRequestDropping(dst, ctx, o, nil)
}

// prepareOriginRequestDropping is prepareOriginRequest that also strips
// the fields named in also (normalised names, compared byte for byte).
func (s *Server) prepareOriginRequestDropping(dst *fasthttp.Request, ctx *fasthttp.RequestCtx, o *origin, also [][]byte) {
	h := &dst.Header
	conn := h.PeekCanonical(httpcache.HeaderConnection)
	var drop [][]byte
	for k := range h.All() {
		switch name := droppedName(k, also); {
		case name != nil: // read-only and lives on: no copy
			drop = append(drop, name)
		case httpcache.HopByHop(k, conn):
			drop = append(drop, append([]byte(nil), k...))
		}
	}
	for _, k := range drop {
		h.DelBytes(k)
	}
	h.ResetConnectionClose()
	clientHost := ctx.Request.Header.Host()
	h.SetCanonical(httpcache.HeaderXForwardedHost, clientHost)
	if ctx.IsTLS() {
		h.SetCanonical(httpcache.HeaderXForwardedProto, schemeHTTPS)
	} else {
		h.SetCanonical(httpcache.HeaderXForwardedProto, schemeHTTP)
	}
	var xff [64]byte
	v := xff[:0]
	if prior := h.PeekCanonical(httpcache.HeaderXForwardedFor); len(prior) > 0 {
		v = append(append(v, prior...), ", "...)
	}
	h.SetCanonical(httpcache.HeaderXForwardedFor, appendIP(v, ctx.RemoteIP()))
	h.AddBytesKV(httpcache.HeaderVia, s.via)
	s.addCDNLoop(h)
	if sc := s.cfg().Policy.SurrogateCapability(); !s.cfg().Policy.IgnoreSurrogateControl && len(sc) > 0 {
		h.AddBytesKV(httpcache.HeaderSurrogateCapability, sc)
	}
	if o.opts.HostHeader == HostOrigin {
		h.SetHostBytes(o.hostHeader)
	}
	dst.SetRequestURIBytes(ctx.Request.Header.RequestURI())
	dst.URI().SetSchemeBytes(o.scheme)
	dst.URI().SetHostBytes(o.addr)
	dst.UseHostHeader = true
}

// appendIP appends ip as net.IP.String writes it (an IPv4-mapped address
// in dotted form), without its allocation.
func appendIP(dst []byte, ip net.IP) []byte {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return append(dst, ip.String()...)
	}
	return a.Unmap().AppendTo(dst)
}

// writeHeaders sets the stored end-to-end headers on the client response,
// the stored Date included (installDate). The names are not normalised
// again: a stored name is canonical (copyResponseHeaders, decodeObject).
// REQUIRES: dst holds nothing but a status code yet.
func writeHeaders(dst *fasthttp.ResponseHeader, kvs []headerKV) {
	installDate(dst, storedDate(kvs))
	addStoredFields(dst, kvs)
}

// writeFillHeaders is writeHeaders for the client response of a fill
// (serveFill), its Date installed through s.dates.
func (s *Server) writeFillHeaders(dst *fasthttp.ResponseHeader, kvs []headerKV) {
	s.dates.install(dst, storedDate(kvs))
	addStoredFields(dst, kvs)
}

// addStoredFields adds the stored fields kvs to dst as they are: Date is
// one fasthttp ignores here (installDate gives it).
func addStoredFields(dst *fasthttp.ResponseHeader, kvs []headerKV) {
	wasOff := dst.DisableNormalizing()
	for _, kv := range kvs {
		dst.AddBytesKV(kv.Key, kv.Value)
	}
	if !wasOff {
		dst.EnableNormalizing()
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
// it parses a header block holding just the Date. A hit pays for that once
// per stored header block: it copies a header prepared this way
// (hit_headers.go). Responses that go
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
	if !usableDate(date) {
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

// usableDate reports whether installDate sends date as it is.
func usableDate(date []byte) bool {
	return len(date) > 0 && len(date) <= maxDateLen && !bytes.ContainsAny(date, "\r\n")
}

// dateHeaders keeps the header installDate last prepared for a miss's
// response (serveFill), with its Date, and gives the next response with
// that Date a copy of it (fasthttp.ResponseHeader.CopyTo: its one field
// appended, nothing parsed) instead of parsing again: the misses of one
// second mostly carry the same Date, the origin's time of generation or,
// when it sent none, the fill's time of receipt. A copy costs about a
// quarter of installDate (BenchmarkMissWriteHeaders). As for hitHeaders,
// the kept header also carries what fasthttp.Server set on the response
// it was prepared on, the same for every response of a Server. A Date is
// kept on its second miss with no other Date missing between, so that
// misses with Dates that differ (origins with other clocks, old
// responses) do not allocate a header each. A kept header is never written again: readers copy it without a
// lock. Safe for concurrent use.
type dateHeaders struct {
	seed   maphash.Seed
	last   atomic.Pointer[dateHeader]
	missed atomic.Uint64 // maphash of the Date that missed last
}

// dateHeader is a response header holding nothing but Date (and the
// status code it was prepared with). Immutable once kept.
type dateHeader struct {
	date []byte
	h    fasthttp.ResponseHeader
}

// init readies c for use.
func (c *dateHeaders) init() { c.seed = maphash.MakeSeed() }

// install is installDate(h, date), with the same result. REQUIRES: h
// holds nothing but a status code yet.
func (c *dateHeaders) install(h *fasthttp.ResponseHeader, date []byte) {
	if t := c.last.Load(); t != nil && len(date) > 0 && bytes.Equal(t.date, date) {
		status := h.StatusCode()
		t.h.CopyTo(h)
		h.SetStatusCode(status)
		return
	}
	installDate(h, date)
	if !usableDate(date) { // installDate sent the current time
		return
	}
	if k := maphash.Bytes(c.seed, date); c.missed.Swap(k) != k {
		return
	}
	t := &dateHeader{date: append([]byte(nil), date...)}
	h.CopyTo(&t.h)
	c.last.Store(t)
}

// storedDate returns the value of the Date field among kvs, or nil.
func storedDate(kvs []headerKV) []byte {
	for _, kv := range kvs {
		if bytes.EqualFold(kv.Key, httpcache.HeaderDate) {
			return kv.Value
		}
	}
	return nil
}

// consumeSurrogate removes Surrogate-Control from an origin response once
// httpcache.StoreDecision has read it: it is addressed to surrogates, and
// strata is the one that acts on it (httpcache's surrogate.go). Kept when
// IgnoreSurrogateControl. It also removes the field addressed to strata
// alone (Policy.TargetedField, httpcache's targeted.go); CDN-Cache-Control
// is left for the CDN tiers downstream (RFC 9213 §3).
func (s *Server) consumeSurrogate(h *fasthttp.ResponseHeader) {
	consumeSurrogate(h, &s.cfg().Policy)
}

// consumeSurrogate is Server.consumeSurrogate under the policy p.
func consumeSurrogate(h *fasthttp.ResponseHeader, p *httpcache.PolicyOptions) {
	if !p.IgnoreSurrogateControl {
		h.DelBytes(httpcache.HeaderSurrogateControl)
	}
	h.Del(p.TargetedField)
}

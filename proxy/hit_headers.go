package proxy

import (
	"bytes"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// Hit headers.
//
// A hit sends the stored header block (object_headers.go), Via,
// Cache-Status and Age. fasthttp takes no serialised block: Set and Add
// copy, validate and normalise one field at a time, and a Date field gets in
// only by parsing (installDate). Both cost a 1 KiB hit more CPU than the
// rest of its handler. So the header a hit sends is prepared once per
// stored block and kept, and each hit copies the prepared one
// (fasthttp.ResponseHeader.CopyTo: one append per field, nothing
// normalised, nothing parsed) and sets Age, the one field that changes.
//
// hitHeaders is that cache. A template is keyed by the record's header
// block, its status, the Cache-Status value and whether it is the 304 form
// (RFC 9110 §15.4.5 fields only); its key bytes are copied, so it does not
// borrow the record. Slots are a fixed table of hitHeaderSlots atomic
// pointers indexed by a seeded maphash of the block (STYLE: client-fed
// in-memory keys use maphash); a key may sit in either slot of a pair, and
// a miss builds the header the slow way, serves it and publishes a copy in
// the pair's empty slot, or over the one its hash picks. A published
// template is never written again, so readers copy it without a lock; a
// replaced one is left to the garbage collector once no reader holds it.
// Memory: at most hitHeaderSlots templates, each about twice its block,
// and at most hitHeaderBytes in all; a template is published on its
// block's second miss in a slot (missed), so that a set of hot objects
// larger than the table does not allocate one per hit. Safe for
// concurrent use.
//
// A template also carries what fasthttp.Server set on the response it was
// built from (NoDefaultDate, NoDefaultContentType): a Server serves through
// the one fasthttp.Server HTTPServer returns, so they are the same for
// every response.
//
// A 200 without a stored Date is never templated: installDate gives it the
// time of sending. A 304 carries fasthttp's own Date, as writeNotModified's
// do (its Response.Reset turns NoDefaultDate off).
type hitHeaders struct {
	seed  maphash.Seed
	slots [hitHeaderSlots]atomic.Pointer[hitHeader]
	// missed holds, per slot, the hash of the last block that missed
	// there: a template is published on a block's second miss, so that
	// more hot blocks than slots rebuild their headers without also
	// allocating a template on every hit.
	missed [hitHeaderSlots]atomic.Uint64
	// bytes is the templates' estimated size (templateSize): publish
	// stops at hitHeaderBytes, as a header block may be as large as the
	// origin's header limit (64 KiB by default) and 8192 of them would
	// be memory no budget counts.
	bytes atomic.Int64
}

// hitHeaderBytes bounds the memory of the templates.
const hitHeaderBytes = 8 << 20

// templateSize estimates a template's memory: its block, the header it
// copied (about the block again) and the structures around them.
func templateSize(block []byte) int64 { return int64(2*len(block) + 512) }

// hitHeaderSlots is the size of the table: 8192 pointers (64 KiB), enough
// for a few thousand hot objects without collisions that rebuild them.
const hitHeaderSlots = 1 << 13

// hitHeader is one prepared response header. Immutable once published.
type hitHeader struct {
	status      int
	cs          cacheStatus
	notModified bool
	block       []byte
	h           fasthttp.ResponseHeader
}

// init readies c for use.
func (c *hitHeaders) init() { c.seed = maphash.MakeSeed() }

func (t *hitHeader) is(block []byte, status int, cs cacheStatus, notModified bool) bool {
	return t != nil && t.status == status && t.cs == cs && t.notModified == notModified && bytes.Equal(t.block, block)
}

// copyTo writes the template for the key into dst and reports whether
// there was one.
func (c *hitHeaders) copyTo(dst *fasthttp.ResponseHeader, block []byte, status int, cs cacheStatus, notModified bool) bool {
	i := c.slot(block)
	for _, j := range [2]uint64{i, i ^ 1} {
		if t := c.slots[j].Load(); t.is(block, status, cs, notModified) {
			t.h.CopyTo(dst)
			return true
		}
	}
	return false
}

// publish keeps a copy of src as the template for the key.
// It keeps none on the block's first miss in its slot, nor past
// hitHeaderBytes.
func (c *hitHeaders) publish(src *fasthttp.ResponseHeader, block []byte, status int, cs cacheStatus, notModified bool) {
	h := maphash.Bytes(c.seed, block)
	i := h & (hitHeaderSlots - 1)
	if c.missed[i].Swap(h) != h {
		return
	}
	size := templateSize(block)
	if c.bytes.Load()+size > hitHeaderBytes {
		return
	}
	t := &hitHeader{status: status, cs: cs, notModified: notModified, block: append([]byte(nil), block...)}
	src.CopyTo(&t.h)
	switch {
	case c.slots[i].Load() == nil:
	case c.slots[i^1].Load() == nil:
		i ^= 1
	default:
		i ^= uint64(len(block)) & 1 // either: the pair's other key is as likely to be hot
	}
	c.bytes.Add(size)
	if old := c.slots[i].Swap(t); old != nil {
		c.bytes.Add(-templateSize(old.block))
	}
}

func (c *hitHeaders) slot(block []byte) uint64 {
	return maphash.Bytes(c.seed, block) & (hitHeaderSlots - 1)
}

// writeStoredHeaders sets on dst the status and headers of a hit on the
// record o, all but Age: the stored fields (their Date included), Via and
// Cache-Status. REQUIRES: dst holds nothing but a status code yet.
func (s *Server) writeStoredHeaders(dst *fasthttp.ResponseHeader, o *object, cs cacheStatus) {
	if s.hitHeaders.copyTo(dst, o.HeaderBlock, o.Status, cs, false) {
		return
	}
	dst.SetStatusCode(o.Status)
	writeHeaders(dst, o.Headers)
	s.addTrace(dst, cs)
	if storedDate(o.Headers) != nil {
		s.hitHeaders.publish(dst, o.HeaderBlock, o.Status, cs, false)
	}
}

// writeStoredNotModified is writeNotModified for a stored record, with its
// headers from hitHeaders.
func (s *Server) writeStoredNotModified(ctx *fasthttp.RequestCtx, o *object, age time.Duration, cs cacheStatus) {
	resp := &ctx.Response
	resp.Reset()
	h := &resp.Header
	if !s.hitHeaders.copyTo(h, o.HeaderBlock, o.Status, cs, true) {
		writeNotModifiedHeaders(h, o.Headers)
		s.addTrace(h, cs)
		s.hitHeaders.publish(h, o.HeaderBlock, o.Status, cs, true)
	}
	s.setAge(h, age)
	s.m.requests[cs.metric()].Inc()
	resp.SkipBody = true
}

// setAge sets Age to age in whole seconds (RFC 9111 §5.1); age < 0 sends
// none.
func (s *Server) setAge(h *fasthttp.ResponseHeader, age time.Duration) {
	if age < 0 {
		return
	}
	var num [20]byte
	h.SetCanonical(httpcache.HeaderAge, fasthttp.AppendUint(num[:0], int(age/time.Second)))
}

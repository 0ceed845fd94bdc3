package proxy

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Early hints to the client.
//
// An origin's 103 (Early Hints, RFC 8297) reaches the client that leads the
// fill, while the origin still works on the final response: the request's
// hintSink (in its reqState) is handed to the origin exchange
// (hintTransport, origin_hints.go), which calls forward for each 103 on
// the leader's own goroutine. Only the Link fields are forwarded, as one
// "HTTP/1.1 103 Early Hints" block per origin 103; a 103 is never stored.
// Coalesced followers, hits, passes and background revalidations get none:
// the 103 arrives once, during the leader's exchange, and is not kept.
// Options.EarlyHints turns forwarding on.
//
// A 103 is written only where it is safe:
//   - to HTTP/1.1 clients, never 1.0 (RFC 9110 §15.2);
//   - when no earlier response on the connection can still sit in
//     fasthttp's write buffer. fasthttp holds a response back while the
//     next pipelined request is already buffered, and a 103 written to the
//     connection meanwhile (as RequestCtx.EarlyHints would) overtakes it,
//     or lands inside it. Connections accepted through Server.Listener
//     record whether a Read reached the socket since the previous handler
//     returned: fasthttp (v1.78, Server.serveConn) reads the socket for
//     the next request header only once it has flushed the previous
//     response (its read buffer held no request, or it flushed before
//     waiting for the rest of the header), so such a Read proves nothing
//     is held back. This holds while the server does not stream request
//     bodies (HTTPServer sets no StreamRequestBody). A request with a body
//     is excluded (its body may have been read with the previous response
//     still held), as is any connection not accepted through Listener;
//     over TLS a request already decrypted ahead gets none.
type hintSink struct {
	s   *Server
	ctx *fasthttp.RequestCtx // nil once the exchange is over or a write failed
	buf []byte               // the 103 being written; kept across requests (reqState)
}

var (
	earlyHintsLine = []byte("HTTP/1.1 103 Early Hints\r\n")
	headerLink     = []byte("Link")
)

// hintsFor hands req (the origin request of the fill that ctx leads) the
// request's hint sink, unless forwarding is off or the client speaks
// HTTP/1.0. The caller clears st.hints.ctx when the exchange is over.
func (s *Server) hintsFor(req *fasthttp.Request, ctx *fasthttp.RequestCtx, st *reqState) {
	if !s.opts.EarlyHints || !ctx.Request.Header.IsHTTP11() {
		return
	}
	st.hints.s, st.hints.ctx = s, ctx
	req.SetUserValue(hintsKey{}, &st.hints)
}

// earlyHintsWriteTimeout bounds the write of a 103: it is made on the
// leader's goroutine during the fill's origin exchange, which every
// collapsed request waits on, and a client that has stopped reading (its
// socket buffers full) would otherwise hold them all for its WriteTimeout.
const earlyHintsWriteTimeout = time.Second

// forward writes h's Link fields to the client as a 103, when that is
// safe (see above). A failed write (or one that took longer than
// earlyHintsWriteTimeout) closes the connection: part of a 103 may have
// left.
func (k *hintSink) forward(h *fasthttp.ResponseHeader) {
	ctx := k.ctx
	if ctx == nil || hasBody(&ctx.Request.Header) || !readSinceHandled(ctx.Conn()) {
		return
	}
	var n int
	if k.buf, n = appendEarlyHints(k.buf[:0], h); n == 0 {
		return
	}
	c := ctx.Conn()
	k.s.deadlines.armWrite(c)
	if _, err := k.s.deadlines.writeWithin(c, k.buf, earlyHintsWriteTimeout); err != nil {
		// Under TLS, the socket: tls.Conn.Close would first try a
		// close_notify, for up to 5 s, to a client that does not read.
		// fasthttp's own Close later finds it closed.
		if tc, ok := c.(*tls.Conn); ok {
			c = tc.NetConn()
		}
		_ = c.Close()
		k.ctx = nil
		return
	}
	k.s.m.earlyHints.Inc()
}

// hasBody reports whether a request came with a body (Content-Length
// above 0, or chunked; -2 is no framing field, no body).
func hasBody(h *fasthttp.RequestHeader) bool {
	cl := h.ContentLength()
	return cl > 0 || cl == -1
}

// appendEarlyHints appends to dst a 103 carrying h's Link fields and
// returns it with how many it carries (0: nothing worth sending). Values
// with control characters are left out.
func appendEarlyHints(dst []byte, h *fasthttp.ResponseHeader) ([]byte, int) {
	dst = append(dst, earlyHintsLine...)
	n := 0
	for _, v := range h.PeekAll(fasthttp.HeaderLink) {
		if len(v) == 0 || !fieldValueOK(v) {
			continue
		}
		dst = append(dst, headerLink...)
		dst = append(dst, ": "...)
		dst = append(dst, v...)
		dst = append(dst, "\r\n"...)
		n++
	}
	return append(dst, "\r\n"...), n
}

// fieldValueOK reports whether v may be written as a field value: no
// control characters but HTAB (RFC 9110 §5.5).
func fieldValueOK(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// Listener wraps ln so that the connections it accepts can receive early
// hints (see hintSink). Serve the HTTPServer on it, directly or under
// tls.NewListener. With forwarding off it returns ln itself: fasthttp
// writes a response's header and a large raw body (a lent hit,
// lent_body.go) in one writev only on a *net.TCPConn, and sends them in
// two writes, part of the body copied, through the wrapper (a 16 KiB hit
// over loopback took 34 to 52% more CPU, BenchmarkHitTCP).
func (s *Server) Listener(ln net.Listener) net.Listener {
	if !s.opts.EarlyHints {
		return ln
	}
	return hintListener{ln}
}

type hintListener struct{ net.Listener }

func (l hintListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &readConn{Conn: c}, nil
}

// readConn records whether a Read returned bytes since the last handler on
// the connection returned. Only fasthttp's goroutine serving the
// connection reads it, runs the handler and calls noteHandled: no lock.
type readConn struct {
	net.Conn
	readSince bool
}

func (c *readConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.readSince = true
	}
	return n, err
}

// readConnOf returns the readConn under c (itself, or under TLS), or nil.
func readConnOf(c net.Conn) *readConn {
	switch c := c.(type) {
	case *readConn:
		return c
	case *tls.Conn:
		rc, _ := c.NetConn().(*readConn)
		return rc
	}
	return nil
}

// noteHandled is called when a handler on c returns.
func noteHandled(c net.Conn) {
	if rc := readConnOf(c); rc != nil {
		rc.readSince = false
	}
}

// readSinceHandled reports whether c was accepted through Listener and has
// read from its socket since its previous handler returned.
func readSinceHandled(c net.Conn) bool {
	rc := readConnOf(c)
	return rc != nil && rc.readSince
}

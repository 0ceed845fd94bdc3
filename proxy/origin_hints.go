package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Interim responses from the origin.
//
// fasthttp's client reads and drops every 1xx before a final response
// inside Response.ReadLimitBody, with no hook. hintTransport is the origin
// client's RoundTripper: every exchange is made here, with the steps of
// fasthttp's default transport (v1.78, client.go transport.RoundTrip) done
// through its exported pieces. The final response's header is read as
// ReadLimitBody reads it (the same ResponseHeader.Read, the same limit of
// 100 interim responses, 101 taken as final), and each 103 on the way is
// handed to the request's hint sink (the user value hintsKey{}, set for
// the client leading a fill, early_hints.go), or dropped without one.
//
// A request without a sink came here too since it costs less: fasthttp's
// default transport allocates four objects for every streamed body (the
// stream's wrapper and three closures), hintBody one; a 1 KiB miss took
// 6% less CPU (BenchmarkMissHybrid).
//
// The body is streamed from a pooled Response of its own, set up with the
// header's framing, and handed to the caller's Response wrapped in a
// hintBody: fasthttp offers no way to wrap the stream it puts in a
// Response without closing it, and the stream has to be wrapped so that
// the connection is pooled (or closed) when the caller closes it.
// hintBody does what fasthttp's clientStreamBody does: reads are
// serialised, a CloseWithError concurrent with a Read closes the
// connection to unblock it and waits for it, and a body not read to its
// end, or closed with an error, closes the connection instead of pooling
// it. A malformed chunked trailer's error quotes the origin's bytes (the
// pooled Response does not have the client's SecureErrorLogMessage);
// every header error reads as the default transport's.
//
// Not carried over, because the origin client sets none of them (newOrigin):
// request timeouts (req.SetTimeout), HostClient.ReadTimeout, WriteTimeout
// and MaxConnDuration; progressConn bounds every read instead.
type hintTransport struct{}

// hintsKey is the request user value holding a request's *hintSink.
type hintsKey struct{}

func (hintTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	sink, _ := req.UserValue(hintsKey{}).(*hintSink)
	cc, err := acquireOpenConn(hc.AcquireConn, hc.CloseConn, req.ConnectionClose())
	if err != nil {
		return false, err
	}
	return roundTripHints(hc, hc, cc, req, resp, sink)
}

// maxClosedConns bounds how many pooled connections one request may find
// closed and drop before it takes one anyway (each dropped one leaves the
// pool, so the pool's size bounds it too).
const maxClosedConns = 64

// acquireOpenConn takes a connection from hc's pool as AcquireConn does,
// but drops one that the origin has closed while it sat idle (peerClosed)
// and takes the next: an origin whose keep-alive timeout is shorter than
// OriginOptions.IdleTimeout closes them all in a quiet spell, and the
// request's two attempts (retryOrigin) would otherwise meet two of them.
// acquire and closeConn are hc.AcquireConn and hc.CloseConn (whose
// connection type fasthttp does not export).
func acquireOpenConn[C poolConn](acquire func(time.Duration, bool) (C, error), closeConn func(C), connClose bool) (C, error) {
	for range maxClosedConns {
		cc, err := acquire(0, connClose)
		if err != nil || !peerClosed(cc.Conn()) {
			return cc, err
		}
		closeConn(cc)
	}
	return acquire(0, connClose)
}

// poolConn is fasthttp's unexported pooled connection type, as
// HostClient.AcquireConn returns it.
type poolConn interface{ Conn() net.Conn }

// connPool is the part of *fasthttp.HostClient a hintBody gives its
// connection C back to.
type connPool[C poolConn] interface {
	ReleaseConn(cc C)
	CloseConn(cc C)
	ReleaseReader(br *bufio.Reader)
}

// roundTripHints is the exchange on cc, taken from hc; pool is hc again,
// seen through connPool so that a hintBody can hold cc.
func roundTripHints[C poolConn](hc *fasthttp.HostClient, pool connPool[C], cc C, req *fasthttp.Request, resp *fasthttp.Response, sink *hintSink) (bool, error) {
	conn := cc.Conn()
	resp.ParseNetConn(conn)
	bw := hc.AcquireWriter(conn)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if err != nil {
		pool.CloseConn(cc)
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() {
			err = fasthttp.ErrTimeout
		}
		return true, err
	}
	br := hc.AcquireReader(conn)
	err = readFinalHeader(br, &resp.Header, sink)
	if err != nil {
		pool.ReleaseReader(br)
		pool.CloseConn(cc)
		return true, err
	}
	closeConn := req.ConnectionClose() || resp.Header.ConnectionClose()
	// No body, as fasthttp's mustSkipContentLength has it: 1xx (only 101
	// gets here), 204, 304; a status below 100 (parsed from "0xx") has one.
	if code := resp.StatusCode(); resp.SkipBody || req.Header.IsHead() || (code >= 100 && code < 200) || code == fasthttp.StatusNoContent || code == fasthttp.StatusNotModified {
		pool.ReleaseReader(br)
		if closeConn {
			pool.CloseConn(cc)
		} else {
			pool.ReleaseConn(cc)
		}
		return false, nil
	}
	cl := resp.Header.ContentLength()
	body := fasthttp.AcquireResponse()
	body.StreamBody = true
	body.Header.SetContentLength(cl) // the framing its body stream reads by
	_ = body.ReadBody(br, 0)         // streaming: only sets up the stream
	resp.SetBodyStream(&hintBody[C]{body: body, pool: pool, cc: cc, br: br, closeConn: closeConn, fullyRead: cl == 0}, cl)
	return false, nil
}

// errTooManyInterim is ReadLimitBody's limit on 1xx responses, kept here;
// its text is what originCause recognises.
var errTooManyInterim = errors.New("proxy: too many 1xx responses from the origin")

// maxInterim is fasthttp's limit on the 1xx responses before a final one.
const maxInterim = 100

// readFinalHeader reads the origin's final response header into h, as
// Response.ReadLimitBody does (1xx are read and dropped, 101 is final),
// handing each 103 to sink on the way.
func readFinalHeader(br *bufio.Reader, h *fasthttp.ResponseHeader, sink *hintSink) error {
	for n := 0; ; n++ {
		if err := h.Read(br); err != nil {
			return err
		}
		code := h.StatusCode()
		if code < 100 || code > 199 || code == fasthttp.StatusSwitchingProtocols {
			return nil
		}
		if n >= maxInterim {
			return errTooManyInterim
		}
		if code == fasthttp.StatusEarlyHints && sink != nil {
			sink.forward(h)
		}
	}
}

// hintBody is the streamed body of a response read by hintTransport: the
// stream of body, reading br on cc. Safe for one reader and a concurrent
// CloseWithError (closeBody).
type hintBody[C poolConn] struct {
	body      *fasthttp.Response // holds the body stream; released at close
	pool      connPool[C]
	cc        C
	br        *bufio.Reader
	closeConn bool // the request or the response said Connection: close
	fullyRead bool // EOF seen: the connection may be pooled
	closed    atomic.Bool
	readMu    sync.Mutex
	closeOnce sync.Once
}

func (b *hintBody[C]) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	b.readMu.Lock()
	defer b.readMu.Unlock()
	if b.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	n, err := b.body.BodyStream().Read(p)
	if errors.Is(err, io.EOF) {
		b.fullyRead = true
	}
	return n, err
}

// CloseWithError ends the body: the connection goes back to the pool when
// the body was read to its end and nothing failed, else it is closed (a
// Read still blocked on it returns first).
func (b *hintBody[C]) CloseWithError(err error) error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		locked := b.readMu.TryLock()
		discard := err != nil || !locked || !b.fullyRead
		if discard {
			_ = b.cc.Conn().Close()
		}
		if !locked {
			b.readMu.Lock()
		}
		defer b.readMu.Unlock()
		closeConn := b.closeConn || discard || b.body.Header.ConnectionClose()
		fasthttp.ReleaseResponse(b.body) // releases the body stream
		b.pool.ReleaseReader(b.br)
		if closeConn {
			b.pool.CloseConn(b.cc)
		} else {
			b.pool.ReleaseConn(b.cc)
		}
	})
	return nil
}

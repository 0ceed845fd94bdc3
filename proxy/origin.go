package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"
)

// origin is one configured origin server and its connection pool.
type origin struct {
	opts       OriginOptions
	scheme     []byte // "http" or "https"
	addr       []byte // host:port dialled
	hostHeader []byte // the origin's own host, for HostOrigin
	client     *fasthttp.HostClient
	s3         *s3Origin // nil unless OriginOptions.S3
}

func newOrigin(oo OriginOptions) (*origin, error) {
	u, err := url.Parse(oo.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	if oo.S3 != nil && oo.S3.Addressing == S3Virtual {
		u.Host = oo.S3.Bucket + "." + u.Host
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	o := &origin{opts: oo, scheme: []byte(u.Scheme), addr: []byte(addr), hostHeader: []byte(u.Host)}
	if oo.S3 != nil {
		if o.s3, err = newS3Origin(oo.S3, u.Host); err != nil {
			return nil, err
		}
	}
	var tlsConfig *tls.Config
	if u.Scheme == "https" {
		if tlsConfig, err = originTLS(u.Hostname(), oo.CAFile); err != nil {
			return nil, err
		}
	}
	dialer := &net.Dialer{Timeout: oo.ConnectTimeout}
	o.client = &fasthttp.HostClient{
		Addr:      addr,
		IsTLS:     tlsConfig != nil,
		TLSConfig: tlsConfig,
		Dial: func(a string) (net.Conn, error) {
			c, err := dialer.Dial("tcp", a)
			if err != nil {
				return nil, err
			}
			return &progressConn{Conn: c, timeout: oo.ResponseTimeout}, nil
		},
		MaxConns:                      oo.MaxConns,
		ReadBufferSize:                oo.MaxHeaderBytes, // bounds the header block (ErrSmallBuffer)
		MaxConnWaitTimeout:            oo.ConnectTimeout,
		MaxIdleConnDuration:           oo.IdleTimeout,
		StreamResponseBody:            true,
		NoDefaultUserAgentHeader:      true,
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: false,
		// Framing errors come back as fasthttp.ErrUnsupportedTransferEncoding
		// (not a message quoting the origin's bytes), see originCause.
		SecureErrorLogMessage: true,
		RetryIfErr:            retryOrigin,
		Transport:             hintTransport{}, // 103 Early Hints (origin_hints.go)
	}
	return o, nil
}

func originTLS(serverName, caFile string) (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: ca_file: %v", ErrInvalidOptions, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: ca_file %s: no PEM certificates", ErrInvalidOptions, caFile)
		}
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}

// progressConn bounds every read by timeout: the wait for response
// headers, and each wait for more body bytes. fasthttp's own deadlines are
// absolute and would cut a long streamed body. It also notes when it was
// last read (the end of its last response, once it is idle in the pool):
// peerClosed asks the kernel about a connection idle that long.
type progressConn struct {
	net.Conn
	timeout  time.Duration
	lastRead time.Time // zero: never read (a new connection)
}

func (c *progressConn) Read(p []byte) (int, error) {
	now := time.Now()
	c.lastRead = now
	if err := c.Conn.SetReadDeadline(now.Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// idleCheckAfter is how long a pooled connection sits idle before it is
// checked for a close by the origin as it is taken: origins close idle
// keep-alive connections after a second or more (Node and Apache after
// 5 s), and a connection taken sooner is taken under load, where the check
// would be a system call per request for nothing.
const idleCheckAfter = 50 * time.Millisecond

// peerClosed reports whether c, taken from the pool after idleCheckAfter
// or more, is unfit for a request: the origin closed it (end of file or
// a reset) or sent something unasked, on an idle HTTP/1.1 connection
// what precedes a close (a 408, a TLS close_notify; rarely a TLS record
// the connection would have survived, a session ticket or a key update,
// which then costs a new connection). It peeks at the socket without
// waiting; a connection read within idleCheckAfter, or never read, is
// taken as open.
func peerClosed(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	pc, ok := c.(*progressConn)
	if !ok || pc.lastRead.IsZero() || time.Since(pc.lastRead) < idleCheckAfter {
		return false
	}
	sc, ok := pc.Conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		closed = err != unix.EAGAIN && err != unix.EWOULDBLOCK // a byte, end of file (nil error) or a reset
		return true
	})
	return closed || err != nil
}

// do sends req and reads the response headers into resp; the body is left
// streaming (resp.BodyStream). The error wraps one of originFaults'
// sentinels, then the cause. When ctx ends while the body streams, the
// body is closed under the reader. An S3 origin signs req and handles
// S3's answers on the way (origin_s3.go).
func (o *origin) do(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response) error {
	if o.s3 != nil {
		return o.s3.do(ctx, o, req, resp)
	}
	return o.send(ctx, req, resp)
}

// send is one exchange of do.
func (o *origin) send(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response) error {
	if err := o.client.Do(req, resp); err != nil {
		return classifyOriginError(err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrOriginUnreachable, err)
	}
	return nil
}

// closeBody closes resp's body stream from any goroutine (fasthttp's
// client stream body allows a Close concurrent with a Read).
func closeBody(body io.Reader, cause error) {
	if c, ok := body.(fasthttp.ReadCloserWithError); ok {
		_ = c.CloseWithError(cause)
	}
}

// router picks the origin for a request's Host.
type router struct {
	byHost map[string]*origin
	def    *origin
	all    []*origin
}

func newRouter(opts []OriginOptions) (*router, error) {
	r := &router{byHost: make(map[string]*origin)}
	for _, oo := range opts {
		o, err := newOrigin(oo)
		if err != nil {
			return nil, err
		}
		r.all = append(r.all, o)
		for _, h := range oo.Hosts {
			// "*.example.com" is kept as ".example.com": pick tries a
			// host's parent domains with their leading dot.
			r.byHost[strings.TrimPrefix(strings.ToLower(h), "*")] = o
		}
		if oo.Default {
			r.def = o
		}
	}
	return r, nil
}

// pick returns the origin for host (port ignored, case-insensitive): an
// exact Hosts entry, else the longest matching wildcard ("*.example.com"
// matches every name under example.com, not example.com itself), else the
// default, or nil.
func (r *router) pick(host []byte) *origin {
	if i := bytes.LastIndexByte(host, ':'); i >= 0 && !bytes.HasSuffix(host, []byte("]")) {
		host = host[:i]
	}
	var buf [256]byte
	if len(host) <= len(buf) {
		n := copy(buf[:], host)
		for i := range n {
			if c := buf[i]; 'A' <= c && c <= 'Z' {
				buf[i] = c + 'a' - 'A'
			}
		}
		if o, ok := r.byHost[string(buf[:n])]; ok {
			return o
		}
		for i := 1; i < n; i++ {
			if buf[i] != '.' {
				continue
			}
			if o, ok := r.byHost[string(buf[i:n])]; ok {
				return o
			}
		}
	}
	return r.def
}

func (r *router) close() {
	for _, o := range r.all {
		o.client.CloseIdleConnections()
	}
}

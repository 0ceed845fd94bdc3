package proxy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Loop detection (RFC 8586, CDN-Loop).
//
// Every origin request carries one more CDN-Loop element of ours,
// "<Token>; node=<id>", where id is random per process. A request that
// arrives carrying our id came back to this very process (an origin that
// leads to ourselves, two tiers pointing at each other): 508 at once, so
// a self-loop costs one nested request, not a pile of them. A request
// carrying Token more than LoopOptions.Allow times passed through too many
// nodes sharing the token (a loop through a fleet): 508 too. Elements of
// other CDNs are kept and forwarded untouched.
//
// The element list is split at commas; a quoted-string parameter holding
// a comma (legal in another CDN's element) can make us misread that
// element, never one of ours: our elements carry no quoted strings.

// LoopOptions configure CDN-Loop handling.
type LoopOptions struct {
	// Token is the cdn-id added to CDN-Loop on origin requests and counted
	// on client requests. Nodes of one fleet and its tiers may share it.
	// Default "strata" (DefaultLoopToken).
	Token string
	// Allow is how many elements with Token a client request may already
	// carry; more is answered 508 Loop Detected. The default, 2, lets an
	// edge → shield → shield chain through; 0 means the default, negative
	// means none may (this node must be the first with Token).
	Allow int
}

// Defaults of LoopOptions.
const (
	DefaultLoopToken = "strata"
	DefaultLoopAllow = 2
)

// EnsureDefaults fills zero fields with their defaults.
func (o *LoopOptions) EnsureDefaults() {
	setDefault(&o.Token, DefaultLoopToken)
	setDefault(&o.Allow, DefaultLoopAllow)
}

// Validate reports a token that is not an RFC 9110 token.
func (o *LoopOptions) Validate() error {
	if o.Token == "" || !isToken(o.Token) {
		return fmt.Errorf("%w: loop token %q: want an HTTP token (letters, digits, !#$%%&'*+-.^_`|~)", ErrInvalidOptions, o.Token)
	}
	return nil
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte("\"(),/:;<=>?@[\\]{}"), c) >= 0 {
			return false
		}
	}
	return true
}

var (
	headerCDNLoop = []byte("CDN-Loop")
	loopNodeParam = []byte("node=")
)

// loop holds this process's CDN-Loop element and verdicts.
type loop struct {
	token   []byte
	id      []byte // random, hex
	element []byte // "<token>; node=<id>"
	allow   int
	refused prometheus.Counter
}

func newLoop(o LoopOptions, reg prometheus.Registerer) (*loop, error) {
	var raw [8]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go 1.24+)
	l := &loop{token: []byte(o.Token), id: []byte(hex.EncodeToString(raw[:])), allow: o.Allow,
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_loop_detected_total",
			Help: "Requests answered 508 Loop Detected: they carried this node's CDN-Loop element, or the shared token more often than allowed.",
		})}
	l.element = fmt.Appendf(nil, "%s; node=%s", l.token, l.id)
	if reg != nil {
		if err := reg.Register(l.refused); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// looped reports whether h, a client request's header, shows a loop.
// It allocates nothing.
func (l *loop) looped(h *fasthttp.RequestHeader) bool {
	n := 0
	for _, v := range h.PeekAll("CDN-Loop") {
		c, self := l.count(v)
		if self {
			return true
		}
		n += c
	}
	return n > max(l.allow, 0)
}

// count returns how many elements of the CDN-Loop value v carry our
// token, and whether one of them is this process's.
func (l *loop) count(v []byte) (n int, self bool) {
	for len(v) > 0 {
		var elem []byte
		elem, v, _ = bytes.Cut(v, []byte(","))
		id, params, _ := bytes.Cut(elem, []byte(";"))
		if !bytes.EqualFold(bytes.TrimSpace(id), l.token) {
			continue
		}
		n++
		for len(params) > 0 {
			var p []byte
			p, params, _ = bytes.Cut(params, []byte(";"))
			if val, ok := bytes.CutPrefix(bytes.TrimSpace(p), loopNodeParam); ok && bytes.Equal(val, l.id) {
				return n, true
			}
		}
	}
	return n, false
}

// refuseLoop answers 508 when the request shows a loop, and reports
// whether it did.
func (s *Server) refuseLoop(ctx *fasthttp.RequestCtx) bool {
	if !s.loop.looped(&ctx.Request.Header) {
		return false
	}
	s.loop.refused.Inc()
	s.fail(ctx, fasthttp.StatusLoopDetected, "proxy: loop detected (CDN-Loop)")
	return true
}

// addCDNLoop appends our element to the origin request header h (a new
// field line: RFC 9110 §5.3 makes it one list with the client's).
func (s *Server) addCDNLoop(h *fasthttp.RequestHeader) {
	h.AddBytesKV(headerCDNLoop, s.loop.element)
}

package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
	"strata/proxy/s3"
)

// An S3 origin (OriginOptions.S3) is a private bucket behind an
// S3-compatible endpoint. Every request strata sends it goes through
// s3Origin.do, which turns the prepared origin request into a signed read
// of one object and S3's answer into what a shield serves:
//
//   - The request: only GET and HEAD reach it (the handler answers other
//     methods 405). The client's path is the object key (s3.AppendKey),
//     sent escaped as SigV4 canonicalises it, the query dropped (S3's
//     sub-resources, ?acl, ?uploads, listing, are not for clients), the
//     client's Authorization and x-amz-* headers dropped, Host set to the
//     bucket's endpoint, then signed (s3.Signer; UNSIGNED-PAYLOAD). An
//     empty key (the bucket itself, a listing) is answered 404 here.
//   - 404 NoSuchKey and 403 AccessDenied become a short negative answer
//     (Cache-Control: max-age=NotFoundTTL or DeniedTTL) that the fill
//     stores like any response, so a storm of requests for a missing key
//     costs the bucket one request (the fill coalesces them).
//   - 503 SlowDown, 500 InternalError and their kin (s3.ClassRetry) are
//     retried, at most MaxRetries times and RetryWait of waiting, with
//     exponential backoff and jitter, honouring Retry-After; a retry also
//     needs a token of the origin's retry budget (one per ten first
//     tries, at most ten saved up), so that a throttling bucket sees at
//     most about 1.1 requests per miss. Each such answer counts in
//     strata_s3_throttled_total. When the tries run out the request fails
//     with ErrOriginThrottled (503; a stored copy is served instead
//     where stale-if-error, grace or StaleIfUnreachable allow).
//   - SignatureDoesNotMatch, RequestTimeTooSkewed, InvalidAccessKeyId and
//     the other s3.ClassCredentials codes fail the request with
//     ErrS3Credentials (502, nothing stored) and log what to fix, at most
//     once per s3LogEvery per origin.
//   - Response headers named x-amz-* are dropped unless ExposeHeaders
//     lists them; the request ids go to the log (debug for answers that
//     are not errors).
//
// Concurrency: an s3Origin is shared by all requests to its origin; its
// mutable state is atomic.
type s3Origin struct {
	opts   S3Options
	signer *s3.Signer
	prefix string // "/bucket" for path-style addressing, else ""
	host   []byte // the Host header signed and sent
	name   string // for logs: the endpoint and bucket
	log    *slog.Logger
	expose []string // lower-case names; a trailing '*' is a prefix

	budget  atomic.Int64 // retry tokens, in tenths (s3BudgetCap at most)
	lastLog atomic.Int64 // unix nanos of the last credentials log line
	c       *s3Counters  // the Server's (newSettings): they outlive a reload's origins
}

// s3Counters are the S3 origins' metrics (registerS3Metrics). The Server
// owns one set, shared by the origins of every settings snapshot, so that
// a reload, which builds new origins, neither resets the counts nor has
// to keep the replaced origins to sum them.
type s3Counters struct {
	throttled, retries, negatives, credErrors atomic.Uint64
}

const (
	s3BudgetCap  = 100 // tenths of a retry: ten retries saved up
	s3LogEvery   = 10 * time.Second
	s3MaxReadErr = s3.MaxErrorBody
)

func newS3Origin(so *S3Options, host string) (*s3Origin, error) {
	creds, from, err := s3.Resolve(s3.Sources{
		Config:   s3.Credentials{AccessKeyID: so.AccessKeyID, SecretAccessKey: so.SecretAccessKey, SessionToken: so.SessionToken},
		Getenv:   so.Getenv,
		ReadFile: so.ReadFile,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: s3 bucket %s: %v", ErrInvalidOptions, so.Bucket, err)
	}
	o := &s3Origin{opts: *so, signer: s3.NewSigner(creds, so.Region), host: []byte(host),
		name: host + " bucket " + so.Bucket, log: so.Logger, c: new(s3Counters)}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if so.Addressing != S3Virtual {
		o.prefix = "/" + so.Bucket
	}
	for _, h := range so.ExposeHeaders {
		o.expose = append(o.expose, strings.ToLower(h))
	}
	o.budget.Store(s3BudgetCap)
	o.log.Info("s3 origin", "origin", o.name, "region", so.Region, "addressing", so.Addressing,
		"access_key_id", creds.AccessKeyID, "credentials", from)
	return o, nil
}

// do sends req (prepared by prepareOriginRequest) to the bucket as
// described on s3Origin and reads the answer's headers into resp.
func (so *s3Origin) do(ctx context.Context, o *origin, req *fasthttp.Request, resp *fasthttp.Response) error {
	// prepare rewrites the path in req; the client's goes back on return,
	// so that a caller sending req again (exchange, after a 304 that
	// selects nothing) asks for the same key, not "bucket/key".
	var pb [256]byte
	u := req.URI()
	client := append(pb[:0], u.PathOriginal()...)
	defer u.SetPathBytes(client)
	if !so.prepare(req) {
		so.synthesize(resp, req.Header.IsHead(), fasthttp.StatusNotFound, so.opts.NotFoundTTL, "NoSuchKey")
		return nil
	}
	so.deposit()
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		so.sign(req)
		if err := o.send(ctx, req, resp); err != nil {
			return err
		}
		status := resp.StatusCode()
		if status < 300 || status == fasthttp.StatusNotModified {
			so.noteAnswer(resp)
			so.stripHeaders(&resp.Header)
			return nil
		}
		eb, body := so.readError(resp)
		switch s3.Classify(status, eb.Code) {
		case s3.ClassMissing:
			so.c.negatives.Add(1)
			so.synthesize(resp, req.Header.IsHead(), status, so.opts.NotFoundTTL, eb.Code)
			return nil
		case s3.ClassDenied:
			so.c.negatives.Add(1)
			so.synthesize(resp, req.Header.IsHead(), status, so.opts.DeniedTTL, eb.Code)
			return nil
		case s3.ClassCredentials:
			so.c.credErrors.Add(1)
			so.logCredentials(status, &eb)
			return fmt.Errorf("%w: %d %s", ErrS3Credentials, status, eb.Code)
		case s3.ClassRetry:
			so.c.throttled.Add(1)
			wait, ok := so.backoff(attempt, &resp.Header, waited)
			if !ok {
				so.log.Debug("s3 throttled: giving up", "origin", so.name, "status", status, "code", eb.Code,
					"request_id", eb.RequestID, "tries", attempt+1)
				return fmt.Errorf("%w: %d %s after %d tries", ErrOriginThrottled, status, eb.Code, attempt+1)
			}
			resp.Reset()
			if err := sleepCtx(ctx, wait); err != nil {
				return fmt.Errorf("%w: %v", ErrOriginUnreachable, err)
			}
			waited += wait
			so.c.retries.Add(1)
			continue
		}
		so.noteAnswer(resp)
		so.stripHeaders(&resp.Header)
		if !req.Header.IsHead() {
			resp.SetBodyStream(bytes.NewReader(body), len(body))
		}
		return nil
	}
}

// prepare rewrites req's path to the object's and drops what the client
// may not send the bucket. False: the path names no key.
func (so *s3Origin) prepare(req *fasthttp.Request) bool {
	h := &req.Header
	var drop [][]byte
	for k := range h.All() {
		if len(k) >= 6 && bytes.EqualFold(k[:6], s3AmzPrefix) {
			drop = append(drop, append([]byte(nil), k...))
		}
	}
	for _, k := range drop {
		h.DelBytes(k)
	}
	h.Del(fasthttp.HeaderAuthorization)
	h.SetHostBytes(so.host)
	key := s3.AppendKey(make([]byte, 0, 128), req.URI().PathOriginal())
	if len(key) == 0 {
		return false
	}
	path := append(make([]byte, 0, len(so.prefix)+len(key)*2+1), so.prefix...)
	path = s3.AppendEscaped(append(path, '/'), key)
	u := req.URI()
	u.DisablePathNormalizing = true
	u.SetPathBytes(path)
	u.SetQueryStringBytes(nil)
	u.SetHashBytes(nil)
	return true
}

var s3AmzPrefix = []byte("x-amz-")

// sign dates and signs req (a new date on every try).
func (so *s3Origin) sign(req *fasthttp.Request) {
	var buf [256]byte
	h := &req.Header
	date := s3.AppendDate(buf[:0], time.Now())
	h.Set(s3.HeaderContentSHA256, s3.UnsignedPayload)
	h.SetBytesV(s3.HeaderDate, date)
	if tok := so.signer.Credentials().SessionToken; tok != "" {
		h.Set(s3.HeaderSecurityToken, tok)
	}
	auth := so.signer.AppendAuthorization(buf[len(date):len(date)], string(h.Method()), req.URI().PathOriginal(), so.host, date)
	h.SetBytesV(fasthttp.HeaderAuthorization, auth)
}

// readError reads (a bounded prefix of) an error answer's body, closes
// it, and parses it; eb is empty when it is not S3's XML.
func (so *s3Origin) readError(resp *fasthttp.Response) (eb s3.ErrorBody, body []byte) {
	if r := resp.BodyStream(); r != nil && resp.Header.ContentLength() <= s3MaxReadErr {
		body, _ = io.ReadAll(io.LimitReader(r, s3MaxReadErr))
	}
	resp.CloseBodyStream()
	eb, _ = s3.ParseError(body)
	if eb.RequestID == "" {
		eb.RequestID = string(resp.Header.Peek("X-Amz-Request-Id"))
	}
	return eb, body
}

// synthesize makes resp the negative answer status for code, fresh for
// ttl (negative: not stored).
func (so *s3Origin) synthesize(resp *fasthttp.Response, head bool, status int, ttl time.Duration, code string) {
	date := append([]byte(nil), resp.Header.Peek(fasthttp.HeaderDate)...)
	resp.Reset()
	resp.Header.SetNoDefaultContentType(true)
	resp.SetStatusCode(status)
	if len(date) > 0 {
		resp.Header.SetBytesV(fasthttp.HeaderDate, date)
	}
	cc := "no-store"
	if ttl >= 0 {
		cc = "max-age=" + strconv.FormatInt(int64(ttl/time.Second), 10)
	}
	resp.Header.Set(fasthttp.HeaderCacheControl, cc)
	resp.Header.SetContentType("text/plain; charset=utf-8")
	body := "s3: " + code + "\n"
	if head {
		resp.Header.SetContentLength(len(body))
		resp.SkipBody = true
		return
	}
	resp.SetBodyStream(strings.NewReader(body), len(body))
}

// stripHeaders drops the x-amz-* fields ExposeHeaders does not list.
func (so *s3Origin) stripHeaders(h *fasthttp.ResponseHeader) {
	var drop [][]byte
	for k := range h.All() {
		if len(k) >= 6 && bytes.EqualFold(k[:6], s3AmzPrefix) && !so.exposed(k) {
			drop = append(drop, append([]byte(nil), k...))
		}
	}
	for _, k := range drop {
		h.DelBytes(k)
	}
}

func (so *s3Origin) exposed(name []byte) bool {
	for _, e := range so.expose {
		if p, ok := strings.CutSuffix(e, "*"); ok {
			if len(name) >= len(p) && strings.EqualFold(string(name[:len(p)]), p) {
				return true
			}
		} else if strings.EqualFold(string(name), e) {
			return true
		}
	}
	return false
}

// noteAnswer logs the request ids of an answer at debug level.
func (so *s3Origin) noteAnswer(resp *fasthttp.Response) {
	if so.log.Enabled(context.Background(), slog.LevelDebug) {
		so.log.Debug("s3 answer", "origin", so.name, "status", resp.StatusCode(),
			"request_id", string(resp.Header.Peek("X-Amz-Request-Id")), "id_2", string(resp.Header.Peek("X-Amz-Id-2")))
	}
}

// s3Fixes says, per credentials code, what an operator should look at.
var s3Fixes = map[string]string{
	"SignatureDoesNotMatch":        "the secret access key does not belong to the access key id (or the region is wrong)",
	"InvalidAccessKeyId":           "the bucket does not know this access key id",
	"RequestTimeTooSkewed":         "this host's clock differs from the bucket's by more than 15 minutes: fix its time (NTP)",
	"ExpiredToken":                 "the session token has expired: reload with fresh credentials",
	"InvalidToken":                 "the session token is not valid",
	"TokenRefreshRequired":         "the session token must be refreshed: reload with fresh credentials",
	"AuthorizationHeaderMalformed": "the region in the signature is not the bucket's: check s3.region",
	"NoSuchBucket":                 "the bucket does not exist at this endpoint: check s3.bucket and the url",
	"PermanentRedirect":            "the bucket is served by another endpoint: check the url and s3.region",
	"InvalidBucketName":            "the bucket name is not valid at this endpoint",
}

// logCredentials logs a credentials error, at most once per s3LogEvery.
func (so *s3Origin) logCredentials(status int, eb *s3.ErrorBody) {
	now := time.Now().UnixNano()
	last := so.lastLog.Load()
	if now-last < int64(s3LogEvery) || !so.lastLog.CompareAndSwap(last, now) {
		return
	}
	so.log.Error("s3 origin refused strata's request: "+s3Fixes[eb.Code], "origin", so.name,
		"status", status, "code", eb.Code, "message", eb.Message, "request_id", eb.RequestID,
		"access_key_id", so.signer.Credentials().AccessKeyID)
}

// deposit adds a tenth of a retry to the budget (each first try).
func (so *s3Origin) deposit() {
	for {
		b := so.budget.Load()
		if b >= s3BudgetCap || so.budget.CompareAndSwap(b, b+1) {
			return
		}
	}
}

// withdraw takes one retry from the budget, if it holds one.
func (so *s3Origin) withdraw() bool {
	for {
		b := so.budget.Load()
		if b < 10 {
			return false
		}
		if so.budget.CompareAndSwap(b, b-10) {
			return true
		}
	}
}

// backoff returns the wait before retry attempt+1 (exponential from
// RetryBase, jittered into [d/2, d), at least the answer's Retry-After),
// or false when no retry may be made: MaxRetries reached, the wait would
// pass RetryWait, or the budget is empty.
func (so *s3Origin) backoff(attempt int, h *fasthttp.ResponseHeader, waited time.Duration) (time.Duration, bool) {
	if attempt >= so.opts.MaxRetries {
		return 0, false
	}
	d := so.opts.RetryBase << min(attempt, 20)
	wait := d/2 + rand.N(d/2+1)
	if ra, ok := retryAfter(h.Peek(fasthttp.HeaderRetryAfter), time.Now()); ok && ra > wait {
		wait = ra
	}
	if waited+wait > so.opts.RetryWait || !so.withdraw() {
		return 0, false
	}
	return wait, true
}

// retryAfter parses a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3).
func retryAfter(v []byte, now time.Time) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	if n, err := strconv.ParseUint(string(v), 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if t, ok := httpcache.ParseDate(v); ok {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

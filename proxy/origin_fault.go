package proxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/valyala/fasthttp"
)

// Origin errors.
//
// Origin silent past ResponseTimeout 504 (the timeout applies to the headers
// and to each body read, see progressConn); an origin that keeps sending,
// slowly, is stopped by FillTimeout; mid-body, either cuts the client's
// connection and counts as a timeout. Every other origin failure before the
// body is 502 with a text naming it: unreachable (connect failed, or the
// connection ended before a response), a header block over
// OriginOptions.MaxHeaderBytes, a repeated or non-numeric Content-Length, too
// many 1xx responses, a malformed header, a framing strata cannot read
// (originFaults). Only unreachable is retried, once: a response the origin did
// send would come the same way again. Each failure is counted under its kind
// in strata_origin_errors_total. None of these, nor 4xx/5xx answers without
// explicit freshness, are stored.

// originFault is one way an origin request fails: the error it is
// reported as, its label in strata_origin_errors_total and the status a
// client gets when nothing of the response was sent yet (STYLE rule 8:
// timeout 504, the rest 502). The 502 or 504 body is err's text.
type originFault struct {
	err    error
	kind   string
	status int
}

// originFaults in the order faultOf matches them; the last one,
// unreachable, takes any error no other matches.
var originFaults = [...]originFault{
	{ErrOriginTimeout, "timeout", fasthttp.StatusGatewayTimeout},
	{ErrTruncated, "truncated", fasthttp.StatusBadGateway},
	{ErrOriginFraming, "framing", fasthttp.StatusBadGateway},
	{ErrOriginHeaderTooLarge, "header_too_large", fasthttp.StatusBadGateway},
	{ErrOriginContentLength, "bad_content_length", fasthttp.StatusBadGateway},
	{ErrOriginInterim, "too_many_1xx", fasthttp.StatusBadGateway},
	{ErrOriginMalformed, "malformed", fasthttp.StatusBadGateway},
	{ErrOriginThrottled, "throttled", fasthttp.StatusServiceUnavailable},
	{ErrS3Credentials, "s3_credentials", fasthttp.StatusBadGateway},
	{ErrOriginUnreachable, "unreachable", fasthttp.StatusBadGateway},
}

// faultOf returns the index in originFaults of the first fault err wraps,
// or of unreachable.
func faultOf(err error) int {
	for i := range originFaults[:len(originFaults)-1] {
		if errors.Is(err, originFaults[i].err) {
			return i
		}
	}
	return len(originFaults) - 1
}

// classifyOriginError wraps an error of fasthttp's client in the sentinel
// naming its cause (originCause).
func classifyOriginError(err error) error {
	return fmt.Errorf("%w: %v", originCause(err), err)
}

// originCause names what fasthttp's client reports (v1.78; TestOriginFaults
// pins each case). Some causes are unexported errors or wrapped in text
// only, so they are told apart by their message: "too many 1xx", "cannot
// parse content-length", and "when reading response headers", which
// fasthttp puts in front of every error met inside a response's header
// block. An error on a response's first byte (the connection closed or
// reset) comes back as io.EOF or ErrConnectionClosed: unreachable.
func originCause(err error) error {
	var small *fasthttp.ErrSmallBuffer
	msg := err.Error()
	switch {
	case isTimeout(err):
		return ErrOriginTimeout
	case isFraming(err):
		return ErrOriginFraming
	case errors.As(err, &small):
		return ErrOriginHeaderTooLarge
	case errors.Is(err, fasthttp.ErrDuplicateContentLength), strings.Contains(msg, "cannot parse content-length"):
		return ErrOriginContentLength
	case strings.Contains(msg, "too many 1xx"):
		return ErrOriginInterim
	case strings.Contains(msg, "when reading response headers"):
		return ErrOriginMalformed
	}
	return ErrOriginUnreachable
}

// bodyError names why reading an origin body failed: no byte within
// ResponseTimeout (a stall) is a timeout; anything else cut it short.
func bodyError(err error) error {
	if isTimeout(err) {
		return fmt.Errorf("%w: body stalled: %v", ErrOriginTimeout, err)
	}
	return fmt.Errorf("%w: %v", ErrTruncated, err)
}

// retryOrigin is the origin client's RetryIfErr: one more attempt, on a
// new connection, when the origin sent nothing of a response (a kept-alive
// connection it had closed); never after a timeout, nor for a response it
// did send, which would come the same way again.
func retryOrigin(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	return false, attempts < 2 && originCause(err) == ErrOriginUnreachable
}

// isFraming: the origin sent a response whose body framing fasthttp
// refuses (Transfer-Encoding other than a lone chunked, RFC 9112 §6.1).
// Reading it until the connection closes (§6.3 rule 4) would give bytes
// in a coding strata cannot undo and whose end cannot be told from a cut.
func isFraming(err error) bool {
	return errors.Is(err, fasthttp.ErrUnsupportedTransferEncoding)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

package proxy

import "errors"

var (
	// ErrInvalidOptions wraps every problem Options.Validate reports.
	ErrInvalidOptions = errors.New("proxy: invalid options")
	// ErrNoOrigin: no origin matches the request's Host and none is the default.
	ErrNoOrigin = errors.New("proxy: no origin for host")
	// ErrOriginTimeout: the origin did not answer, or stalled mid-body,
	// within OriginOptions.ResponseTimeout, or a fill ran past
	// Options.FillTimeout. Served as 504 when nothing was sent yet.
	ErrOriginTimeout = errors.New("proxy: origin timeout")
	// ErrOriginUnreachable: connecting to the origin failed, or the
	// connection failed or closed before the first byte of a response.
	// Served as 502; a request sent on a kept-alive connection that fails
	// so is retried once on a new one.
	ErrOriginUnreachable = errors.New("proxy: origin unreachable")
	// ErrOriginFraming: the origin's response header announces a body
	// framing strata cannot read: a Transfer-Encoding other than chunked
	// alone (RFC 9112 §6.1: e.g. "gzip, chunked" or an unknown coding), or
	// several Transfer-Encoding lines. Served as 502, never retried, never
	// stored: the body's length and content cannot be verified (as nginx's
	// "upstream sent unknown Transfer-Encoding").
	ErrOriginFraming = errors.New("proxy: origin response framing not supported")
	// ErrOriginHeaderTooLarge: the origin's status line and header block
	// do not fit OriginOptions.MaxHeaderBytes. Served as 502, never retried.
	ErrOriginHeaderTooLarge = errors.New("proxy: origin response header too large")
	// ErrOriginContentLength: the origin's response carries several
	// Content-Length fields or one that is not a decimal number (RFC 9112
	// §6.3 rule 5: an unrecoverable framing error). Served as 502, never
	// retried.
	ErrOriginContentLength = errors.New("proxy: origin response Content-Length invalid or repeated")
	// ErrOriginInterim: the origin sent more 1xx (informational) responses
	// before its final one than fasthttp reads (100). Served as 502, never
	// retried.
	ErrOriginInterim = errors.New("proxy: origin sent too many 1xx responses")
	// ErrOriginMalformed: the origin's response header does not parse (a
	// bad status line, a bad field) or ends before its blank line. Served
	// as 502, never retried.
	ErrOriginMalformed = errors.New("proxy: origin response malformed")
	// ErrOriginThrottled: an S3 origin kept answering 503 SlowDown or 500
	// InternalError (s3.ClassRetry) through the retries S3Options allow.
	// Served as 503 (or a stored copy, as for an unreachable origin).
	ErrOriginThrottled = errors.New("proxy: origin is throttling requests")
	// ErrS3Credentials: an S3 origin refused strata's signature, keys,
	// clock or bucket (SignatureDoesNotMatch, InvalidAccessKeyId,
	// RequestTimeTooSkewed, NoSuchBucket, ...). Served as 502, never
	// stored; logged with what to fix.
	ErrS3Credentials = errors.New("proxy: s3 origin refused strata's credentials or settings")
	// ErrTruncated: the origin body ended before its declared length, or the
	// chunked body ended without its final chunk, or reading it failed.
	ErrTruncated = errors.New("proxy: origin body truncated")
	// ErrCorrupt: a record read back from the store does not decode. The
	// request is served as a miss and the record is counted.
	ErrCorrupt = errors.New("proxy: corrupt stored object")
	// ErrFillLagged: a reader of a shared fill fell behind the fill's
	// in-memory window and the bytes it needs are neither in memory nor in
	// the store. Its connection is closed.
	ErrFillLagged = errors.New("proxy: reader fell behind the fill")
	// ErrClosed: the Server is closed.
	ErrClosed = errors.New("proxy: server closed")
	// ErrPurgeURL: the URL given to a purge by URL does not parse as an
	// absolute http or https URL.
	ErrPurgeURL = errors.New("proxy: purge: bad URL")
	// ErrPurgeTag: a tag given to a purge by tag is empty, longer than
	// maxTagLen, or holds a byte no stored tag can hold (see tags.go).
	ErrPurgeTag = errors.New("proxy: purge: bad tag")
	// ErrPurgePrefix: the prefix given to a purge by prefix does not parse
	// as an absolute http or https URL.
	ErrPurgePrefix = errors.New("proxy: purge: bad prefix")
)

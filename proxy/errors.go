package proxy

import "errors"

var (
	// ErrInvalidOptions wraps every problem Options.Validate reports.
	ErrInvalidOptions = errors.New("proxy: invalid options")
	// ErrNoOrigin: no origin matches the request's Host and none is the default.
	ErrNoOrigin = errors.New("proxy: no origin for host")
	// ErrOriginTimeout: the origin did not answer (or stalled) within
	// OriginOptions.ResponseTimeout. Served as 504.
	ErrOriginTimeout = errors.New("proxy: origin timeout")
	// ErrOriginUnreachable: connecting to or talking with the origin failed
	// before a response arrived. Served as 502.
	ErrOriginUnreachable = errors.New("proxy: origin unreachable")
	// ErrOriginFraming: the origin's response header announces a body
	// framing strata cannot read: a Transfer-Encoding other than chunked
	// alone (RFC 9112 §6.1: e.g. "gzip, chunked" or an unknown coding), or
	// several Transfer-Encoding lines. Served as 502, never retried, never
	// stored: the body's length and content cannot be verified (as nginx's
	// "upstream sent unknown Transfer-Encoding").
	ErrOriginFraming = errors.New("proxy: origin response framing not supported")
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
	// ErrPurgeURL: the URL given to Purge does not parse as an absolute
	// http or https URL.
	ErrPurgeURL = errors.New("proxy: purge: bad URL")
	// ErrPurgeTag: a tag given to PurgeTags is empty, longer than
	// MaxTagLen, or holds a byte no stored tag can hold (see tags.go).
	ErrPurgeTag = errors.New("proxy: purge: bad tag")
	// ErrPurgePrefix: the prefix given to PurgePrefix does not parse as an
	// absolute http or https URL.
	ErrPurgePrefix = errors.New("proxy: purge: bad prefix")
)

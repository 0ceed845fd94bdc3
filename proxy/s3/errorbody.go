package s3

import (
	"encoding/xml"
	"fmt"
)

// ErrorBody is what an S3 error response's XML body says:
//
//	<Error><Code>NoSuchKey</Code><Message>…</Message><RequestId>…</RequestId></Error>
//
// Its strings are copies, bounded by the body given to ParseError.
type ErrorBody struct {
	Code      string `xml:"Code"`
	Message   string `xml:"Message"`
	RequestID string `xml:"RequestId"`
	HostID    string `xml:"HostId"`
	Region    string `xml:"Region"`
}

// MaxErrorBody bounds the bytes of an error body ParseError reads; S3's
// are a few hundred.
const MaxErrorBody = 16 << 10

// ParseError parses an S3 error body (at most MaxErrorBody bytes; the
// caller bounds its read). A body that is not an <Error> document, or
// has no Code, is ErrErrorBody.
func ParseError(b []byte) (ErrorBody, error) {
	var e struct {
		XMLName xml.Name
		ErrorBody
	}
	if len(b) > MaxErrorBody {
		return ErrorBody{}, fmt.Errorf("%w: over %d bytes", ErrErrorBody, MaxErrorBody)
	}
	if err := xml.Unmarshal(b, &e); err != nil {
		return ErrorBody{}, fmt.Errorf("%w: %v", ErrErrorBody, err)
	}
	if e.XMLName.Local != "Error" || e.Code == "" {
		return ErrorBody{}, fmt.Errorf("%w: no <Error><Code>", ErrErrorBody)
	}
	return e.ErrorBody, nil
}

// Class sorts S3's error codes by what a shield does with them.
type Class uint8

const (
	// ClassOther: an answer passed on as the bucket gave it.
	ClassOther Class = iota
	// ClassMissing: the key is not there (NoSuchKey), or the
	// credentials may not list the bucket and so cannot tell a missing
	// key from a forbidden one (AccessDenied): a short-lived negative
	// answer.
	ClassMissing
	// ClassDenied is AccessDenied, kept apart from NoSuchKey for its TTL.
	ClassDenied
	// ClassRetry: the bucket is throttling or failed inside (SlowDown,
	// ServiceUnavailable, InternalError): retried with backoff.
	ClassRetry
	// ClassCredentials: strata's credentials, clock or bucket settings
	// are wrong; every request will fail the same way until an operator
	// acts.
	ClassCredentials
)

// Classify returns the class of an error answer with status and code
// (code may be empty: a HEAD answer has no body).
func Classify(status int, code string) Class {
	switch code {
	case "NoSuchKey":
		return ClassMissing
	case "AccessDenied":
		return ClassDenied
	case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout":
		return ClassRetry
	case "SignatureDoesNotMatch", "RequestTimeTooSkewed", "InvalidAccessKeyId", "ExpiredToken",
		"InvalidToken", "TokenRefreshRequired", "AuthorizationHeaderMalformed", "NoSuchBucket",
		"PermanentRedirect", "InvalidBucketName":
		return ClassCredentials
	}
	switch {
	case code == "" && status == 404:
		return ClassMissing
	case status == 500 || status == 503:
		return ClassRetry
	}
	return ClassOther
}

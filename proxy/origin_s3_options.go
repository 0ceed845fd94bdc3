package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// S3 addressing styles of S3Options.Addressing.
const (
	// S3Path puts the bucket in the path: endpoint/bucket/key.
	S3Path = "path"
	// S3Virtual puts it in the host name: bucket.endpoint/key.
	S3Virtual = "virtual"
)

// S3Options make an origin an S3-compatible bucket (origin_s3.go): every
// request to it is a signed GET or HEAD of the object the client's path
// names, and S3's answers are handled as a shield should.
type S3Options struct {
	// Bucket is the bucket's name. Required.
	Bucket string
	// Region is the bucket's region, part of every signature (MinIO and
	// versitygw accept any; "us-east-1" is their usual). Required.
	Region string
	// Addressing is S3Path (default) or S3Virtual.
	Addressing string
	// AccessKeyID, SecretAccessKey and SessionToken are the credentials;
	// when both of the first two are empty, the environment's
	// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) are
	// used, else the shared credentials file's under AWS_PROFILE (see
	// s3.Resolve). Read when the origin is built (start and reload).
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// NotFoundTTL is how long a missing key (404 NoSuchKey) is answered
	// from the cache. Default 1m (as nginx-s3-gateway); negative: not
	// cached.
	NotFoundTTL time.Duration
	// DeniedTTL is the same for 403 AccessDenied (what a key missing from
	// a bucket strata may not list looks like). Default 30s; negative:
	// not cached.
	DeniedTTL time.Duration
	// MaxRetries bounds the retries of one request answered 503 SlowDown
	// or 500 InternalError (and their kin: s3.ClassRetry). Default 3;
	// negative: none.
	MaxRetries int
	// RetryBase is the first backoff; each retry doubles it, with jitter
	// (a wait in [b/2, b)); a Retry-After longer than that is honoured.
	// Default 100ms.
	RetryBase time.Duration
	// RetryWait bounds the time one request spends waiting between its
	// tries; a wait that would pass it is not made. Default 2s.
	RetryWait time.Duration
	// ExposeHeaders are the x-amz-* response headers passed on to
	// clients (and stored); a trailing '*' matches a prefix, as in
	// "x-amz-meta-*". Every other x-amz-* header is dropped. Default none.
	ExposeHeaders []string
	// Getenv and ReadFile are where credentials are looked up when the
	// options name none. Default os.Getenv and os.ReadFile; tests inject.
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
	// Logger receives the S3 origin's log lines. Default Options.Logger.
	Logger *slog.Logger
}

// Defaults of S3Options.
const (
	DefaultS3NotFoundTTL = time.Minute
	DefaultS3DeniedTTL   = 30 * time.Second
	DefaultS3MaxRetries  = 3
	DefaultS3RetryBase   = 100 * time.Millisecond
	DefaultS3RetryWait   = 2 * time.Second
)

// EnsureDefaults fills zero fields with their defaults.
func (o *S3Options) EnsureDefaults(logger *slog.Logger) {
	setDefault(&o.Addressing, S3Path)
	setDefault(&o.NotFoundTTL, DefaultS3NotFoundTTL)
	setDefault(&o.DeniedTTL, DefaultS3DeniedTTL)
	setDefault(&o.MaxRetries, DefaultS3MaxRetries)
	setDefault(&o.RetryBase, DefaultS3RetryBase)
	setDefault(&o.RetryWait, DefaultS3RetryWait)
	if o.Logger == nil {
		o.Logger = logger
	}
}

// Validate reports every problem of o.
func (o *S3Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("s3: "+format, args...))
	}
	if !validBucket(o.Bucket) {
		bad("bucket %q: want 3-63 of a-z 0-9 . - (S3's bucket naming rules)", o.Bucket)
	}
	if o.Region == "" || strings.ContainsAny(o.Region, "/ \r\n") {
		bad("region %q: required, a region name such as eu-west-1", o.Region)
	}
	if o.Addressing != S3Path && o.Addressing != S3Virtual {
		bad("addressing %q: want %q or %q", o.Addressing, S3Path, S3Virtual)
	}
	if o.RetryBase <= 0 || o.RetryWait <= 0 {
		bad("retry_base and retry_wait must be positive")
	}
	for _, h := range o.ExposeHeaders {
		if !strings.HasPrefix(strings.ToLower(h), "x-amz-") {
			bad("expose_headers %q: only x-amz-* headers are dropped, so only they can be exposed", h)
		}
	}
	return errors.Join(errs...)
}

// validBucket: S3's rules for new buckets, loosely (a shield need not
// police legacy names beyond what fits a host name and a path).
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

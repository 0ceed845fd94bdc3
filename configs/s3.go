package configs

import (
	"fmt"
	"strings"

	"strata/proxy"
	"strata/proxy/s3"
)

// S3 makes an origin a private S3-compatible bucket: the origin's url is
// the endpoint (https://s3.eu-west-1.amazonaws.com, a MinIO or RGW
// address), every request is signed with AWS Signature Version 4, and
// S3's errors are handled as a shield should (proxy/origin_s3.go). A
// client's path is the object key.
//
// Credentials: access_key_id with secret_access_key_file (or, less
// safely, secret_access_key inline); when neither is set, the
// environment's AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, else the shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials) under AWS_PROFILE.
type S3 struct {
	Bucket              string   `yaml:"bucket"`                           // required
	Region              string   `yaml:"region"`                           // required, e.g. eu-west-1 (MinIO: us-east-1)
	Addressing          string   `yaml:"addressing"`                       // path (endpoint/bucket/key) | virtual (bucket.endpoint/key); default path
	AccessKeyID         string   `yaml:"access_key_id,omitempty"`          // else the AWS environment / credentials file
	SecretAccessKey     string   `yaml:"secret_access_key,omitempty"`      // prefer secret_access_key_file
	SecretAccessKeyFile string   `yaml:"secret_access_key_file,omitempty"` // first line is the secret
	NotFoundTTL         Duration `yaml:"not_found_ttl"`                    // 404 NoSuchKey cached this long; default 1m; negative: not cached
	DeniedTTL           Duration `yaml:"denied_ttl"`                       // 403 AccessDenied cached this long; default 30s; negative: not cached
	MaxRetries          int      `yaml:"max_retries"`                      // retries of a 503 SlowDown / 500 InternalError; default 3; negative: none
	RetryBase           Duration `yaml:"retry_base"`                       // first backoff, doubled each retry, jittered; default 100ms
	RetryWait           Duration `yaml:"retry_wait"`                       // most time one request waits between tries; default 2s
	ExposeHeaders       []string `yaml:"expose_headers,omitempty"`         // x-amz-* headers passed on, e.g. x-amz-meta-*; others dropped
}

// Addressing styles of S3.Addressing.
const (
	S3Path    = proxy.S3Path
	S3Virtual = proxy.S3Virtual
)

func (s *S3) ensureDefaults() {
	setStr(&s.Addressing, S3Path)
	setDur(&s.NotFoundTTL, proxy.DefaultS3NotFoundTTL)
	setDur(&s.DeniedTTL, proxy.DefaultS3DeniedTTL)
	setInt(&s.MaxRetries, proxy.DefaultS3MaxRetries)
	setDur(&s.RetryBase, proxy.DefaultS3RetryBase)
	setDur(&s.RetryWait, proxy.DefaultS3RetryWait)
	s.ExposeHeaders = nilIfEmpty(s.ExposeHeaders)
}

func (s *S3) validate(ps *problems, f string) {
	if s.Bucket == "" {
		ps.add(f+".bucket", "required")
	}
	if s.Region == "" {
		ps.add(f+".region", "required (MinIO and most S3-compatible stores take us-east-1)")
	}
	checkEnum(ps, f+".addressing", s.Addressing, S3Path, S3Virtual)
	if s.SecretAccessKey != "" && s.SecretAccessKeyFile != "" {
		ps.add(f+".secret_access_key_file", "set either secret_access_key or secret_access_key_file, not both")
	}
	if s.AccessKeyID == "" && (s.SecretAccessKey != "" || s.SecretAccessKeyFile != "") {
		ps.add(f+".access_key_id", "a secret needs its access_key_id")
	}
	if s.AccessKeyID != "" && s.SecretAccessKey == "" && s.SecretAccessKeyFile == "" {
		ps.add(f+".secret_access_key_file", "access_key_id needs secret_access_key_file (or secret_access_key)")
	}
	checkPositiveDur(ps, f+".retry_base", s.RetryBase)
	checkPositiveDur(ps, f+".retry_wait", s.RetryWait)
	for k, h := range s.ExposeHeaders {
		if !strings.HasPrefix(strings.ToLower(h), "x-amz-") {
			ps.add(fmt.Sprintf("%s.expose_headers[%d]", f, k), "%q: only x-amz-* headers are dropped, so only they need exposing", h)
		}
	}
}

// options maps s onto proxy.S3Options, reading secret_access_key_file.
func (s *S3) options(ps *problems, f string) *proxy.S3Options {
	secret := s.SecretAccessKey
	if s.SecretAccessKeyFile != "" {
		b, err := readSmall(s.SecretAccessKeyFile, maxTokenFile)
		if err != nil {
			ps.add(f+".secret_access_key_file", "%v", unwrapPath(err))
		}
		secret, _, _ = strings.Cut(string(b), "\n")
		if secret = strings.TrimSpace(secret); secret == "" && err == nil {
			ps.add(f+".secret_access_key_file", "%s holds no secret", s.SecretAccessKeyFile)
		}
	}
	if s.AccessKeyID == "" {
		// Credentials from the environment: say now, not at the first
		// request, when there are none.
		if _, _, err := s3.Resolve(s3.Sources{}); err != nil {
			ps.add(f, "%v", err)
		}
	}
	return &proxy.S3Options{
		Bucket:          s.Bucket,
		Region:          s.Region,
		Addressing:      s.Addressing,
		AccessKeyID:     s.AccessKeyID,
		SecretAccessKey: secret,
		NotFoundTTL:     s.NotFoundTTL.D(),
		DeniedTTL:       s.DeniedTTL.D(),
		MaxRetries:      s.MaxRetries,
		RetryBase:       s.RetryBase.D(),
		RetryWait:       s.RetryWait.D(),
		ExposeHeaders:   s.ExposeHeaders,
	}
}

package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/proxy"
)

// TestS3Compose: an s3 block maps onto proxy.S3Options, defaults filled
// and the secret read from its file.
func TestS3Compose(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("  s3cr3t \nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := "origins:\n  - url: http://127.0.0.1:9000\n    host_header: origin\n    s3:\n      bucket: media\n      region: us-east-1\n" +
		"      access_key_id: AK\n      secret_access_key_file: " + secret + "\n      expose_headers: [x-amz-meta-*]\n"
	c, err := Load([]byte(yaml), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compose(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Proxy.Origins[0].S3
	want := proxy.S3Options{Bucket: "media", Region: "us-east-1", Addressing: proxy.S3Path, AccessKeyID: "AK", SecretAccessKey: "s3cr3t",
		NotFoundTTL: time.Minute, DeniedTTL: 30 * time.Second, MaxRetries: 3, RetryBase: 100 * time.Millisecond, RetryWait: 2 * time.Second,
		ExposeHeaders: []string{"x-amz-meta-*"}}
	if got == nil || got.Bucket != want.Bucket || got.SecretAccessKey != want.SecretAccessKey || got.NotFoundTTL != want.NotFoundTTL ||
		got.DeniedTTL != want.DeniedTTL || got.MaxRetries != want.MaxRetries || got.RetryBase != want.RetryBase ||
		got.RetryWait != want.RetryWait || got.Addressing != want.Addressing || len(got.ExposeHeaders) != 1 {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if err := c.CheckFiles(); err != nil {
		t.Fatal(err)
	}
}

func TestS3Problems(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	const head = "origins:\n  - url: http://127.0.0.1:9000\n    s3:\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"no bucket", head + "      region: r\n      access_key_id: a\n      secret_access_key: b\n", "origins[0].s3.bucket"},
		{"no region", head + "      bucket: media\n      access_key_id: a\n      secret_access_key: b\n", "origins[0].s3.region"},
		{"addressing", head + "      bucket: media\n      region: r\n      addressing: dns\n      access_key_id: a\n      secret_access_key: b\n", "origins[0].s3.addressing"},
		{"secret without key", head + "      bucket: media\n      region: r\n      secret_access_key: b\n", "origins[0].s3.access_key_id"},
		{"key without secret", head + "      bucket: media\n      region: r\n      access_key_id: a\n", "origins[0].s3.secret_access_key_file"},
		{"expose", head + "      bucket: media\n      region: r\n      access_key_id: a\n      secret_access_key: b\n      expose_headers: [etag]\n", "origins[0].s3.expose_headers[0]"},
		{"no credentials anywhere", head + "      bucket: media\n      region: r\n", "origins[0].s3"},
		{"missing secret file", head + "      bucket: media\n      region: r\n      access_key_id: a\n      secret_access_key_file: /nonexistent/secret\n", "origins[0].s3.secret_access_key_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load([]byte(tc.yaml), "t.yaml")
			if err == nil {
				_, err = c.Compose(nil)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a problem at %s", err, tc.want)
			}
		})
	}
}

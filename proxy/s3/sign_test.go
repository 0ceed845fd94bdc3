package s3

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// The example of AWS's "Signature Calculations for the Authorization
// Header" page (GET /test.txt from examplebucket with Range): its
// canonical request hashes to the string to sign the page shows, and
// that string signed with the derived key gives the page's signature.
// This pins the key derivation and the HMAC chain.
func TestSignAWSExample(t *testing.T) {
	const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	canonical := "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n" +
		"x-amz-content-sha256:" + empty + "\nx-amz-date:20130524T000000Z\n\n" +
		"host;range;x-amz-content-sha256;x-amz-date\n" + empty
	sum := sha256.Sum256([]byte(canonical))
	if got, want := hex.EncodeToString(sum[:]), "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"; got != want {
		t.Fatalf("canonical request hash %s, want %s", got, want)
	}
	s := NewSigner(Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}, "us-east-1")
	st := s.pool.Get().(*signState)
	mac := st.keyed(s, []byte("20130524"))
	mac.Write([]byte("AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n" + hex.EncodeToString(sum[:])))
	if got, want := hex.EncodeToString(mac.Sum(nil)), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

// The canonical request of a read, written out by hand for awkward keys:
// the path is the escaped key as sent, nothing is escaped twice.
func TestCanonicalRequest(t *testing.T) {
	tests := []struct {
		name, rawPath, bucket, token, wantPath string
	}{
		{"plain", "/a/b.txt", "media", "", "/media/a/b.txt"},
		{"space", "/a%20b", "media", "", "/media/a%20b"},
		{"plus literal", "/a+b", "media", "", "/media/a%2Bb"},
		{"plus escaped", "/a%2Bb", "media", "", "/media/a%2Bb"},
		{"percent", "/100%25", "media", "", "/media/100%25"},
		{"bare percent", "/100%", "media", "", "/media/100%25"},
		{"bad escape", "/a%zzb", "media", "", "/media/a%25zzb"},
		{"utf8", "/caf%C3%A9/%E2%9C%93", "media", "", "/media/caf%C3%A9/%E2%9C%93"},
		{"raw utf8", "/café", "media", "", "/media/caf%C3%A9"},
		{"slashes", "//a///b/", "media", "", "/media//a///b/"},
		{"dots", "/a/../b/./c", "", "", "/a/../b/./c"},
		{"reserved", "/a=b&c;d,e:f@g$h!i'j(k)l*m", "", "", "/a%3Db%26c%3Bd%2Ce%3Af%40g%24h%21i%27j%28k%29l%2Am"},
		{"unreserved", "/AZaz09-_.~", "", "tok", "/AZaz09-_.~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := AppendPath(nil, tt.bucket, AppendKey(nil, []byte(tt.rawPath)))
			if string(path) != tt.wantPath {
				t.Fatalf("path %q, want %q", path, tt.wantPath)
			}
			s := NewSigner(Credentials{AccessKeyID: "AK", SecretAccessKey: "SK", SessionToken: tt.token}, "eu-west-1")
			got := string(s.canonicalRequest(nil, "GET", path, []byte("s3.example:9000"), []byte("20260102T030405Z")))
			want := "GET\n" + tt.wantPath + "\n\nhost:s3.example:9000\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:20260102T030405Z\n"
			signed := "host;x-amz-content-sha256;x-amz-date"
			if tt.token != "" {
				want += "x-amz-security-token:" + tt.token + "\n"
				signed += ";x-amz-security-token"
			}
			want += "\n" + signed + "\nUNSIGNED-PAYLOAD"
			if got != want {
				t.Fatalf("canonical request\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestAuthorizationLayout(t *testing.T) {
	s := NewSigner(Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, "us-east-1")
	date := AppendDate(nil, time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	if string(date) != "20261202T100000Z" {
		t.Fatalf("date %s", date)
	}
	a := string(s.AppendAuthorization(nil, "GET", []byte("/b/k"), []byte("h"), date))
	prefix := "AWS4-HMAC-SHA256 Credential=AKID/20261202/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="
	if !strings.HasPrefix(a, prefix) || len(a) != len(prefix)+64 {
		t.Fatalf("authorization %q", a)
	}
	// The same input signs the same; another day, key or path does not.
	if b := string(s.AppendAuthorization(nil, "GET", []byte("/b/k"), []byte("h"), date)); b != a {
		t.Fatalf("not deterministic: %q vs %q", a, b)
	}
	other := []string{
		string(s.AppendAuthorization(nil, "GET", []byte("/b/k2"), []byte("h"), date)),
		string(s.AppendAuthorization(nil, "HEAD", []byte("/b/k"), []byte("h"), date)),
		string(s.AppendAuthorization(nil, "GET", []byte("/b/k"), []byte("h"), []byte("20261203T100000Z"))),
		string(NewSigner(Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret2"}, "us-east-1").AppendAuthorization(nil, "GET", []byte("/b/k"), []byte("h"), date)),
	}
	for i, o := range other {
		if o[len(o)-64:] == a[len(a)-64:] {
			t.Errorf("variant %d signs the same", i)
		}
	}
}

func TestSignAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	s := NewSigner(Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, "us-east-1")
	dst := make([]byte, 0, 256)
	path := []byte("/bucket/some/key%20with%20spaces")
	date := []byte("20261202T100000Z")
	s.AppendAuthorization(dst, "GET", path, []byte("host"), date)
	if n := testing.AllocsPerRun(100, func() {
		dst = s.AppendAuthorization(dst[:0], "GET", path, []byte("host"), date)
	}); n != 0 {
		t.Fatalf("%v allocations per signature", n)
	}
}

// BenchmarkSign is the cost of one signature (compare with a miss's CPU
// in proxy's BenchmarkS3Miss).
func BenchmarkSign(b *testing.B) {
	s := NewSigner(Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}, "eu-west-1")
	path := AppendPath(nil, "media", AppendKey(nil, []byte("/videos/2026/a%20b+c/segment-000123.ts")))
	date := []byte("20261202T100000Z")
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		dst = s.AppendAuthorization(dst[:0], "GET", path, []byte("s3.eu-west-1.amazonaws.com"), date)
	}
}

package s3

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseError(t *testing.T) {
	tests := []struct {
		name, body, code, reqID string
		ok                      bool
	}{
		{"no such key", `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>a b</Key><RequestId>4442587FB7D0A2F9</RequestId><HostId>h</HostId></Error>`, "NoSuchKey", "4442587FB7D0A2F9", true},
		{"slow down", `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`, "SlowDown", "", true},
		{"not error", `<ListBucketResult></ListBucketResult>`, "", "", false},
		{"no code", `<Error><Message>x</Message></Error>`, "", "", false},
		{"html", `<html><body>503</body></html>`, "", "", false},
		{"empty", ``, "", "", false},
		{"truncated", `<Error><Code>NoSuch`, "", "", false},
		{"too large", `<Error><Code>X</Code>` + strings.Repeat(" ", MaxErrorBody) + `</Error>`, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseError([]byte(tt.body))
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrErrorBody)) {
				t.Fatalf("err %v, want ok=%v", err, tt.ok)
			}
			if e.Code != tt.code || e.RequestID != tt.reqID {
				t.Fatalf("got %+v", e)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		code   string
		want   Class
	}{
		{404, "NoSuchKey", ClassMissing},
		{404, "", ClassMissing},
		{403, "AccessDenied", ClassDenied},
		{403, "", ClassOther}, // a HEAD: a bad signature looks the same
		{503, "SlowDown", ClassRetry},
		{500, "InternalError", ClassRetry},
		{503, "", ClassRetry},
		{403, "SignatureDoesNotMatch", ClassCredentials},
		{403, "RequestTimeTooSkewed", ClassCredentials},
		{403, "InvalidAccessKeyId", ClassCredentials},
		{404, "NoSuchBucket", ClassCredentials},
		{400, "InvalidArgument", ClassOther},
		{412, "PreconditionFailed", ClassOther},
	}
	for _, tt := range tests {
		if got := Classify(tt.status, tt.code); got != tt.want {
			t.Errorf("Classify(%d, %q) = %d, want %d", tt.status, tt.code, got, tt.want)
		}
	}
}

const credsFile = `# shared credentials
[default]
aws_access_key_id = AKDEFAULT
aws_secret_access_key = SKDEFAULT

; temporary
[ ci ]
aws_access_key_id=AKCI
aws_secret_access_key=SK=with=equals
aws_session_token = TOKEN
region = ignored
[half]
aws_access_key_id = AKHALF
`

func TestParseCredentialsFile(t *testing.T) {
	tests := []struct {
		profile string
		want    Credentials
		ok      bool
	}{
		{"default", Credentials{"AKDEFAULT", "SKDEFAULT", ""}, true},
		{"ci", Credentials{"AKCI", "SK=with=equals", "TOKEN"}, true},
		{"half", Credentials{}, false},
		{"absent", Credentials{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			c, err := ParseCredentialsFile([]byte(credsFile), tt.profile)
			if (err == nil) != tt.ok || c != tt.want {
				t.Fatalf("got %+v, %v", c, err)
			}
		})
	}
	for _, bad := range []string{"[default\nx=y", "[default]\nnot a pair"} {
		if _, err := ParseCredentialsFile([]byte(bad), "default"); !errors.Is(err, ErrCredentialsFile) {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

func TestResolve(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	file := func(path string) ([]byte, error) {
		if path == "/home/u/.aws/credentials" || path == "/etc/creds" {
			return []byte(credsFile), nil
		}
		return nil, os.ErrNotExist
	}
	tests := []struct {
		name string
		src  Sources
		want Credentials
		from string
		ok   bool
	}{
		{"config", Sources{Config: Credentials{AccessKeyID: "A", SecretAccessKey: "S"}, Getenv: env(map[string]string{"AWS_ACCESS_KEY_ID": "E"})}, Credentials{AccessKeyID: "A", SecretAccessKey: "S"}, "config", true},
		{"half config", Sources{Config: Credentials{AccessKeyID: "A"}}, Credentials{}, "", false},
		{"env", Sources{Getenv: env(map[string]string{"AWS_ACCESS_KEY_ID": "E", "AWS_SECRET_ACCESS_KEY": "ES", "AWS_SESSION_TOKEN": "T"})}, Credentials{"E", "ES", "T"}, "environment", true},
		{"home file", Sources{Getenv: env(map[string]string{"HOME": "/home/u"}), ReadFile: file}, Credentials{"AKDEFAULT", "SKDEFAULT", ""}, "/home/u/.aws/credentials [default]", true},
		{"file and profile", Sources{Getenv: env(map[string]string{"AWS_SHARED_CREDENTIALS_FILE": "/etc/creds", "AWS_PROFILE": "ci"}), ReadFile: file}, Credentials{"AKCI", "SK=with=equals", "TOKEN"}, "/etc/creds [ci]", true},
		{"nothing", Sources{Getenv: env(map[string]string{"HOME": "/nowhere"}), ReadFile: file}, Credentials{}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, from, err := Resolve(tt.src)
			if (err == nil) != tt.ok || c != tt.want || from != tt.from {
				t.Fatalf("got %+v from %q, %v", c, from, err)
			}
		})
	}
}

func FuzzParseError(f *testing.F) {
	f.Add([]byte(`<Error><Code>NoSuchKey</Code><RequestId>1</RequestId></Error>`))
	f.Add([]byte(`<Error><Code><![CDATA[x]]></Code></Error>`))
	f.Add([]byte(`<?xml version="1.0"?><Error><Code>SlowDown</Code>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseError(b)
		if err == nil && e.Code == "" {
			t.Fatalf("ok without a code: %q", b)
		}
		if err != nil && e != (ErrorBody{}) {
			t.Fatalf("error with a body %+v", e)
		}
	})
}

func FuzzParseCredentialsFile(f *testing.F) {
	f.Add([]byte(credsFile), "ci")
	f.Add([]byte("[default]\naws_access_key_id=a\naws_secret_access_key=b"), "default")
	f.Add([]byte("[x"), "x")
	f.Fuzz(func(t *testing.T, b []byte, profile string) {
		c, err := ParseCredentialsFile(b, profile)
		if err == nil && (c.AccessKeyID == "" || c.SecretAccessKey == "") {
			t.Fatalf("ok without a key pair: %+v", c)
		}
		if err != nil && !errors.Is(err, ErrCredentialsFile) {
			t.Fatalf("unwrapped error %v", err)
		}
	})
}

func FuzzKeyPath(f *testing.F) {
	for _, s := range []string{"/a%20b", "/%", "/%2", "//x//", "/é+%2B"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		key := AppendKey(nil, raw)
		path := AppendPath(nil, "", key)
		// The escaped path decodes back to the key, and holds only
		// unreserved bytes, '/' and escapes.
		if got := AppendKey(nil, path); string(got) != string(key) {
			t.Fatalf("key %q escapes to %q which decodes to %q", key, path, got)
		}
		for i := 0; i < len(path); i++ {
			c := path[i]
			if !unreserved(c) && c != '/' && c != '%' {
				t.Fatalf("byte %q left unescaped in %q", c, path)
			}
		}
	})
}

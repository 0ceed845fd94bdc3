package s3

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sources are where Resolve looks for credentials, in order: the
// config's own (AccessKeyID with SecretAccessKey), then the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), then the
// shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
// ~/.aws/credentials) under the profile AWS_PROFILE (else "default"), as
// the AWS CLI and SDKs read them. Getenv and ReadFile default to the
// process's; tests inject their own.
type Sources struct {
	Config   Credentials
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

// maxCredentialsFile bounds the shared credentials file read.
const maxCredentialsFile = 1 << 20

// Resolve returns the first complete credentials of src and where they
// came from ("config", "environment", or the file and profile).
func Resolve(src Sources) (Credentials, string, error) {
	if src.Getenv == nil {
		src.Getenv = os.Getenv
	}
	if src.ReadFile == nil {
		src.ReadFile = os.ReadFile
	}
	if c := src.Config; c.AccessKeyID != "" || c.SecretAccessKey != "" {
		if c.AccessKeyID == "" || c.SecretAccessKey == "" {
			return Credentials{}, "", fmt.Errorf("%w: the config names only half a key pair (access_key_id and a secret go together)", ErrNoCredentials)
		}
		return c, "config", nil
	}
	env := Credentials{
		AccessKeyID:     src.Getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: src.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    src.Getenv("AWS_SESSION_TOKEN"),
	}
	if env.AccessKeyID != "" && env.SecretAccessKey != "" {
		return env, "environment", nil
	}
	path := src.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if path == "" {
		home := src.Getenv("HOME")
		if home == "" {
			return Credentials{}, "", fmt.Errorf("%w: none in the config or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, and no HOME for ~/.aws/credentials", ErrNoCredentials)
		}
		path = filepath.Join(home, ".aws", "credentials")
	}
	profile := src.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	b, err := src.ReadFile(path)
	if err != nil {
		return Credentials{}, "", fmt.Errorf("%w: none in the config or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, and %v", ErrNoCredentials, err)
	}
	if len(b) > maxCredentialsFile {
		return Credentials{}, "", fmt.Errorf("%w: %s: larger than 1 MiB", ErrCredentialsFile, path)
	}
	c, err := ParseCredentialsFile(b, profile)
	if err != nil {
		return Credentials{}, "", fmt.Errorf("%s: %w", path, err)
	}
	return c, path + " [" + profile + "]", nil
}

// ParseCredentialsFile reads the profile's keys from a shared credentials
// file: an INI file of "[profile]" sections holding "key = value" lines
// (aws_access_key_id, aws_secret_access_key, aws_session_token; other
// keys ignored), with '#' and ';' comment lines. A profile given twice
// merges, later lines winning, as the AWS CLI reads it.
func ParseCredentialsFile(b []byte, profile string) (Credentials, error) {
	var c Credentials
	found := false
	in := false
	for n, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			name, ok := bytes.CutSuffix(line[1:], []byte("]"))
			if !ok {
				return Credentials{}, fmt.Errorf("%w: line %d: a section header without ']'", ErrCredentialsFile, n+1)
			}
			in = strings.TrimSpace(string(name)) == profile
			found = found || in
			continue
		}
		k, v, ok := bytes.Cut(line, []byte("="))
		if !ok {
			return Credentials{}, fmt.Errorf("%w: line %d: want key = value", ErrCredentialsFile, n+1)
		}
		if !in {
			continue
		}
		val := string(bytes.TrimSpace(v))
		switch strings.ToLower(string(bytes.TrimSpace(k))) {
		case "aws_access_key_id":
			c.AccessKeyID = val
		case "aws_secret_access_key":
			c.SecretAccessKey = val
		case "aws_session_token":
			c.SessionToken = val
		}
	}
	switch {
	case !found:
		return Credentials{}, fmt.Errorf("%w: no profile %q", ErrCredentialsFile, profile)
	case c.AccessKeyID == "" || c.SecretAccessKey == "":
		return Credentials{}, fmt.Errorf("%w: profile %q lacks aws_access_key_id or aws_secret_access_key", ErrCredentialsFile, profile)
	}
	return c, nil
}

package s3

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sync"
	"time"
)

// Header names and values of a signed request.
const (
	HeaderDate          = "X-Amz-Date"
	HeaderContentSHA256 = "X-Amz-Content-Sha256"
	HeaderSecurityToken = "X-Amz-Security-Token"
	UnsignedPayload     = "UNSIGNED-PAYLOAD"
	algorithm           = "AWS4-HMAC-SHA256"
	dateLen             = len("20060102T150405Z")
)

// Credentials are an access key pair, with the session token of
// temporary credentials (empty for long-term keys).
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// Signer signs S3 reads for one bucket's region with one set of
// credentials (see the package doc). Safe for concurrent use.
type Signer struct {
	creds         Credentials
	region        string
	signedHeaders string
	pool          sync.Pool // *signState
}

// signState is one signature's scratch: the canonical request and string
// to sign, the request hash, and an HMAC keyed with one day's signing key.
type signState struct {
	buf  []byte
	sum  [sha256.Size]byte
	day  [8]byte // the UTC date (YYYYMMDD) mac is keyed for
	key  [sha256.Size]byte
	mac  hash.Hash
	hash hash.Hash
}

// NewSigner returns a Signer for region with creds.
func NewSigner(creds Credentials, region string) *Signer {
	s := &Signer{creds: creds, region: region, signedHeaders: "host;x-amz-content-sha256;x-amz-date"}
	if creds.SessionToken != "" {
		s.signedHeaders += ";x-amz-security-token"
	}
	s.pool.New = func() any { return &signState{buf: make([]byte, 0, 512), hash: sha256.New()} }
	return s
}

// Credentials returns the signer's credentials.
func (s *Signer) Credentials() Credentials { return s.creds }

// AppendDate appends t as an x-amz-date value (ISO 8601 basic, UTC).
func AppendDate(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, "20060102T150405Z")
}

// AppendAuthorization appends the Authorization value of a request with
// method, the escaped path (AppendPath; the canonical URI), no query, the
// Host value host and x-amz-date amzDate (AppendDate), signed as the
// package doc says. The request must carry the headers it names:
// x-amz-content-sha256 UnsignedPayload, x-amz-date amzDate and, with a
// session token, x-amz-security-token.
// REQUIRES: len(amzDate) == 16.
func (s *Signer) AppendAuthorization(dst []byte, method string, path, host, amzDate []byte) []byte {
	st := s.pool.Get().(*signState)
	day := amzDate[:8]
	b := s.canonicalRequest(st.buf[:0], method, path, host, amzDate)
	st.hash.Reset()
	st.hash.Write(b)
	st.hash.Sum(st.sum[:0])
	// The string to sign.
	b = append(b[:0], algorithm+"\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	b = s.appendScope(b, day)
	b = append(b, '\n')
	b = hex.AppendEncode(b, st.sum[:])
	mac := st.keyed(s, day)
	mac.Write(b)
	mac.Sum(st.sum[:0])
	st.buf = b

	dst = append(dst, algorithm+" Credential="...)
	dst = append(dst, s.creds.AccessKeyID...)
	dst = append(dst, '/')
	dst = s.appendScope(dst, day)
	dst = append(dst, ", SignedHeaders="...)
	dst = append(dst, s.signedHeaders...)
	dst = append(dst, ", Signature="...)
	dst = hex.AppendEncode(dst, st.sum[:])
	s.pool.Put(st)
	return dst
}

// canonicalRequest appends the SigV4 canonical request (AWS's "Create a
// canonical request": method, URI, query, headers, signed headers,
// payload hash; one per line).
func (s *Signer) canonicalRequest(b []byte, method string, path, host, amzDate []byte) []byte {
	b = append(b, method...)
	b = append(b, '\n')
	b = append(b, path...)
	b = append(b, "\n\nhost:"...)
	b = append(b, host...)
	b = append(b, "\nx-amz-content-sha256:"+UnsignedPayload+"\nx-amz-date:"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	if s.creds.SessionToken != "" {
		b = append(b, "x-amz-security-token:"...)
		b = append(b, s.creds.SessionToken...)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	b = append(b, s.signedHeaders...)
	b = append(b, '\n')
	return append(b, UnsignedPayload...)
}

// appendScope appends the credential scope "YYYYMMDD/region/s3/aws4_request".
func (s *Signer) appendScope(b, day []byte) []byte {
	b = append(b, day...)
	b = append(b, '/')
	b = append(b, s.region...)
	return append(b, "/s3/aws4_request"...)
}

// keyed returns st's HMAC, reset and keyed with the signing key of day,
// deriving that key when st last signed on another day.
func (st *signState) keyed(s *Signer, day []byte) hash.Hash {
	if st.mac == nil || string(st.day[:]) != string(day) {
		k := hmacSum(nil, []byte("AWS4"+s.creds.SecretAccessKey), day)
		k = hmacSum(k[:0], k, []byte(s.region))
		k = hmacSum(k[:0], k, []byte("s3"))
		k = hmacSum(k[:0], k, []byte("aws4_request"))
		copy(st.key[:], k)
		copy(st.day[:], day)
		st.mac = hmac.New(sha256.New, st.key[:])
	}
	st.mac.Reset()
	return st.mac
}

func hmacSum(dst, key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(dst)
}

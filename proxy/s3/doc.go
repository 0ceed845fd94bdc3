// Package s3 holds what strata needs to talk to a private S3-compatible
// bucket, as pure functions and small types over the standard library:
// AWS Signature Version 4 for GET and HEAD requests (sign.go), the
// object key and request path a client's path becomes (key.go), the
// credential sources every AWS tool reads (credentials.go), and S3's XML
// error bodies (errorbody.go).
//
// Signing. Every request is signed with the payload hash
// "UNSIGNED-PAYLOAD" (reads carry no body) and exactly four headers at
// most: host, x-amz-content-sha256, x-amz-date and, with temporary
// credentials, x-amz-security-token. Range and the conditionals are
// deliberately left out of SignedHeaders: SigV4 requires host and every
// x-amz-* header to be signed, nothing else, so one template serves every
// range of an object. The signing key (four chained HMACs) is derived once
// per UTC day and region and cached; a signature is then one SHA-256 of
// the canonical request and one HMAC of the string to sign, on pooled
// state, allocating nothing.
//
// Why not the AWS SDK's signer: github.com/aws/aws-sdk-go-v2's v4 signer
// (and smithy-go's aws-http-auth) sign a *net/http.Request; strata's
// origin requests are fasthttp requests, so each miss would build a
// net/http request, its header map and URL only to be signed, and the
// canonical path of a key would pass through url.URL's escaping, which
// is where S3 signers go wrong for keys with spaces, '+' or '%'
// (DisableURIPathEscaping, RawPath). Building the canonical request from
// the bytes strata itself sends keeps the two equal by construction; the
// published AWS example signatures and versitygw's verifier check it
// (sign_test.go, e2e/s3_test.go).
//
// Concurrency: a Signer is safe for concurrent use. Nothing here starts a
// goroutine.
package s3

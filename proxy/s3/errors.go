package s3

import "errors"

var (
	// ErrNoCredentials: neither the config, the environment nor the
	// shared credentials file gave an access key and secret.
	ErrNoCredentials = errors.New("s3: no credentials")
	// ErrCredentialsFile: the shared credentials file does not parse, or
	// lacks the profile asked for.
	ErrCredentialsFile = errors.New("s3: credentials file")
	// ErrErrorBody: an S3 error body is not the XML document S3 sends.
	ErrErrorBody = errors.New("s3: error body")
)

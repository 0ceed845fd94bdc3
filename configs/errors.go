package configs

import "errors"

// Sentinel errors. Check with errors.Is.
var (
	// ErrInvalid: a config failed to decode or to validate. The error is a
	// Problems value listing every problem found.
	ErrInvalid = errors.New("configs: invalid config")
	// ErrSize: a size or rate string is malformed, negative or overflows.
	ErrSize = errors.New("configs: bad size")
)

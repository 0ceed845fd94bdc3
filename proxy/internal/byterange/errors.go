package byterange

import "errors"

// Errors of Parse. Check with errors.Is.
var (
	// ErrInvalid: the Range field is syntactically invalid, names another
	// unit than bytes, or cannot be resolved (unknown size). RFC 9110 §14.2:
	// ignore the field and answer 200 with the whole representation.
	ErrInvalid = errors.New("byterange: bad Range")
	// ErrTooMany: more than MaxSpecs range-specs, refused as a
	// denial-of-service guard (RFC 9110 §14.2 lets a server ignore such a
	// field). Answer as for ErrInvalid: 200 with the whole representation.
	ErrTooMany = errors.New("byterange: too many ranges in Range")
	// ErrUnsatisfiable: no range-spec overlaps the representation: answer
	// 416 with Content-Range: bytes */size (RFC 9110 §15.5.17).
	ErrUnsatisfiable = errors.New("byterange: range not satisfiable")
)

package admission

import "errors"

// Sentinel errors. Check with errors.Is: Validate and the constructors wrap
// them with the name of the offending field.
var (
	// ErrInvalidOptions: an Options field is out of range. Validate joins
	// one wrapped error per problem, so errors.Is finds this sentinel and
	// the message lists every problem at once.
	ErrInvalidOptions = errors.New("admission: invalid options")
)

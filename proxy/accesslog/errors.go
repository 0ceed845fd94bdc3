package accesslog

import "errors"

// ErrFormat is returned by Open for a format other than combined or json.
var ErrFormat = errors.New("accesslog: unknown format")

// ErrPath is returned by Open for an empty path.
var ErrPath = errors.New("accesslog: no path")

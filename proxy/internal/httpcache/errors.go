package httpcache

import "errors"

// ErrPolicyOptions: PolicyOptions or KeyOptions failed Validate; the
// error wraps it and lists every problem. Check with errors.Is.
var ErrPolicyOptions = errors.New("httpcache: invalid policy options")

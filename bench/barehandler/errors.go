package main

import "errors"

// ErrSize: a /obj/<size> path does not name a size.
var ErrSize = errors.New("barehandler: bad size")

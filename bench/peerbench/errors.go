package main

import "errors"

// Sentinels of the orchestrator; error text starts with the program name.
var (
	// ErrOptions: a flag value is invalid; the error lists every problem.
	ErrOptions = errors.New("peerbench: invalid options")
	// ErrSize: a size string such as "64MiB" does not parse.
	ErrSize = errors.New("peerbench: bad size")
	// ErrNotReady: a system did not answer in time after it started.
	ErrNotReady = errors.New("peerbench: system not ready")
	// ErrWrkOutput: wrk's output lacks the line our Lua done() hook prints.
	ErrWrkOutput = errors.New("peerbench: wrk output has no PEERBENCH line")
	// ErrUnavailable: a peer's binary is missing and could not be installed.
	ErrUnavailable = errors.New("peerbench: not installed")
)

module strata

go 1.26

require (
	github.com/cespare/xxhash/v2 v2.3.0
	go.uber.org/goleak v1.3.0
)

module strata/bench/otter

go 1.26.0

require (
	github.com/maypok86/otter/v2 v2.4.0
	strata v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace strata => ../..

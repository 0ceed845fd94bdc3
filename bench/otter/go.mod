module strata/bench/otter

go 1.26

require (
	github.com/maypok86/otter/v2 v2.4.0
	strata v0.0.0
)

replace strata => ../..

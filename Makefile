# strata: see README.md. Every target works on a fresh machine with only Go;
# what a target needs beyond that it installs (Debian packages via apt-get)
# or skips with a message saying why.

GO        ?= go
BIN       := bin
PKGS      := ./...
# Packages whose tests run the real binaries; they run once, not under -race.
E2E       := ./e2e/...
FUZZTIME  ?= 10s

.PHONY: all build demo test test-unit test-race e2e lint fuzz bench bench-peers clean conformance

all: build

# cmd/proxy is the strata binary: go names it after its directory, so it
# is renamed bin/strata.
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/...
	@mv -f $(BIN)/proxy $(BIN)/strata

# demo starts the sample origin and strata on loopback and shows a miss, a
# memory hit, a disk hit, a no-store pass and the metrics with curl.
demo: build
	@sh cmd/demo/demo.sh $(BIN)

# test is what CI runs (.ci/run): lint, unit tests with invariants on,
# the race detector over every package but e2e, and the e2e tests.
test: lint test-unit test-race

test-unit:
	$(GO) test -tags invariants -count=1 $(PKGS)

test-race:
	$(GO) test -race -count=1 $$($(GO) list $(PKGS) | grep -v /e2e)

e2e: build
	$(GO) test -count=1 $(E2E)

# conformance runs the public HTTP caching test suite (http-cache-tests,
# installed at run time with npm) against strata and fails when a suite
# passes fewer required tests than e2e/conformance/baseline.json; skipped
# without Node.js. See e2e/conformance/run.sh.
conformance:
	@GO=$(GO) sh e2e/conformance/run.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags invariants $(PKGS)
	$(GO) test -count=1 -run 'TestLayering' ./e2e

# fuzz runs every Fuzz target for FUZZTIME each (go test -fuzz takes one
# target per invocation).
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
	  dir=$$(dirname $$f); \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
	    echo "== $$dir $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$dir; \
	  done; \
	done

# bench runs cmd/blockdev-bench: blockdev against fio (installed if
# missing) on one temporary file, on a real file system: TMPDIR or /tmp,
# or this directory when that is tmpfs (where O_DIRECT means nothing).
BENCHTIME   ?= 5s
BENCHSIZE   ?= 1GiB
BENCHROUNDS ?= 1
bench:
	@command -v fio >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y fio)
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/blockdev-bench ./cmd/blockdev-bench
	@base=$${TMPDIR:-/tmp}; \
	  if [ "$$(stat -f -c %T $$base)" = tmpfs ]; then base=$(CURDIR); fi; \
	  dir=$$(mktemp -d -p $$base blockdev-bench.XXXXXX) || exit 1; \
	  $(BIN)/blockdev-bench -file $$dir/dev -size $(BENCHSIZE) -time $(BENCHTIME) -rounds $(BENCHROUNDS) -procs both; \
	  rc=$$?; rm -rf $$dir; exit $$rc

# bench-peers: strata beside nginx proxy_cache, Varnish and Traffic Server
# on the sample origin (issue 7); installs the peers and wrk if missing.
# SCENARIOS=1a,3 runs a subset; empty runs all.
SCENARIOS ?=
bench-peers: build
	$(BIN)/peerbench -scenarios "$(SCENARIOS)"

clean:
	rm -rf $(BIN)

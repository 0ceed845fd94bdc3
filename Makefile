# strata: see README.md. Every target works on a fresh machine with only Go;
# what a target needs beyond that it installs (Debian packages via apt-get)
# or skips with a message saying why.

GO        ?= go
BIN       := bin
PKGS      := ./...
# Packages whose tests run the real binaries; they run once, not under -race.
E2E       := ./e2e/...
FUZZTIME  ?= 10s

.PHONY: all build build-bench demo test soak test-unit test-race test-rules e2e lint fuzz bench bench-engine bench-hybrid bench-peers clean conformance

all: build

# cmd/proxy is the strata binary: go names it after its directory, so it
# is renamed bin/strata.
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/...
	@mv -f $(BIN)/proxy $(BIN)/strata

# The benchmarks are a Go module of their own (bench/go.mod), so that
# their plotting and histogram libraries stay out of strata's module graph.
BENCH_CMDS := peerbench hybrid-bench engine-bench blockdev-bench barehandler
build-bench:
	@mkdir -p $(BIN)
	cd bench && $(GO) build -o ../$(BIN)/ $(addprefix ./,$(BENCH_CMDS))

# demo starts the sample origin and strata on loopback and shows a miss, a
# memory hit, a disk hit, a no-store pass and the metrics with curl.
demo: build
	@sh cmd/demo/demo.sh $(BIN)

# test is what CI runs (.ci/run): lint, unit tests with invariants on,
# the race detector over every package but e2e, and the e2e tests, then
# the alert rules.
test: lint test-unit test-race conformance test-rules

# test-rules checks configs/prometheus/alerts.yaml and runs its unit
# tests with promtool (Debian's prometheus package, installed if
# missing; skipped with a message where it cannot be installed).
test-rules:
	@command -v promtool >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus) || true
	@if ! command -v promtool >/dev/null; then echo "test-rules: skipped: promtool missing and the prometheus package could not be installed"; exit 0; fi; \
	  cd configs/prometheus && promtool check rules alerts.yaml && promtool test rules alerts_test.yaml

# haproxy fronts three strata nodes in e2e/fleet_test.go; where it cannot
# be installed (no apt-get, not root) those tests skip and say so.
HAPROXY_INSTALL = command -v haproxy >/dev/null || \
	(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y haproxy) || \
	echo "haproxy could not be installed: the fleet e2e tests will skip"

# versitygw (a real S3 API server that verifies SigV4) is the bucket of
# e2e/s3_test.go; installed into GOBIN (or GOPATH/bin) with go install.
# Where it cannot be (no network, no module proxy) those tests skip and
# say so.
VERSITYGW_VERSION := v1.8.0
VERSITYGW_INSTALL = command -v versitygw >/dev/null || test -x "$$($(GO) env GOBIN)/versitygw" || \
	test -x "$$($(GO) env GOPATH | cut -d: -f1)/bin/versitygw" || \
	$(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION) || \
	echo "versitygw could not be installed: the S3 origin e2e tests will skip"

test-unit:
	@$(HAPROXY_INSTALL)
	@$(VERSITYGW_INSTALL)
	$(GO) test -tags invariants -count=1 $(PKGS)
	cd bench && $(GO) test -count=1 ./...

test-race:
	$(GO) test -race -count=1 $$($(GO) list $(PKGS) | grep -v /e2e)

e2e: build
	@$(HAPROXY_INSTALL)
	@$(VERSITYGW_INSTALL)
	$(GO) test -count=1 $(E2E)

# soak: SOAK_TIME (default 30m) of mixed load (misses, memory and disk
# hits, large sliced objects) against strata on a FUSE disk that keeps
# hanging and failing; every response must be whole, RSS stay under the
# logged budget, RSS and goroutines flat at the end (e2e/soak_test.go).
# Not part of make test.
SOAK_TIME ?= 30m
soak:
	STRATA_SOAK=$(SOAK_TIME) $(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v $(E2E)

# conformance runs the public HTTP caching test suite (http-cache-tests,
# installed at run time with npm) against strata and fails when a suite
# passes fewer required tests than e2e/conformance/baseline.json; skipped
# without Node.js. See e2e/conformance/run.sh.
conformance:
	@GO=$(GO) sh e2e/conformance/run.sh

# lint also refuses tracked files over 1 MiB (build outputs, data sets):
# they are cloned by everyone for good.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@big=$$(git ls-files -z 2>/dev/null | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 {print}'); \
	  if [ -n "$$big" ]; then echo "tracked files over 1 MiB (do not commit build outputs or data):"; echo "$$big"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags invariants $(PKGS)
	cd bench && $(GO) vet ./...
	$(GO) test -count=1 -run 'TestLayering' ./e2e

# fuzz runs every Fuzz target for FUZZTIME each (go test -fuzz takes one
# target per invocation).
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
	  dir=$$(dirname $$f); mod=.; \
	  case $$dir in ./bench/*) mod=bench; dir=./$${dir#./bench/};; esac; \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
	    echo "== $$mod $$dir $$t"; \
	    (cd $$mod && $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$dir); \
	  done; \
	done

# bench runs bench/blockdev-bench: blockdev against fio (installed if
# missing) on one temporary file, on a real file system: TMPDIR or /tmp,
# or this directory when that is tmpfs (where O_DIRECT means nothing).
BENCHTIME   ?= 5s
BENCHSIZE   ?= 1GiB
BENCHROUNDS ?= 1
bench: bench-engine bench-hybrid
	@command -v fio >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y fio)
	@mkdir -p $(BIN)
	cd bench && $(GO) build -o ../$(BIN)/blockdev-bench ./blockdev-bench
	@base=$${TMPDIR:-/tmp}; \
	  if [ "$$(stat -f -c %T $$base)" = tmpfs ]; then base=$(CURDIR); fi; \
	  dir=$$(mktemp -d -p $$base blockdev-bench.XXXXXX) || exit 1; \
	  $(BIN)/blockdev-bench -file $$dir/dev -size $(BENCHSIZE) -time $(BENCHTIME) -rounds $(BENCHROUNDS) -procs both; \
	  rc=$$?; rm -rf $$dir; exit $$rc

# bench-engine runs bench/engine-bench: the disk engine against fio on the
# same files (write rate, rate-limited write rate, disk-hit Get latency,
# recovery of a 4 GiB file, index RAM and GC with 5 M entries), medians of
# ENGINEROUNDS rounds. It needs about 6 GiB free in TMPDIR (or here, when
# that is tmpfs) and drops the page cache before recovery when root.
ENGINETIME   ?= 3s
ENGINEROUNDS ?= 3
bench-engine:
	@command -v fio >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y fio)
	@mkdir -p $(BIN)
	cd bench && $(GO) build -o ../$(BIN)/engine-bench ./engine-bench
	@base=$${TMPDIR:-/tmp}; \
	  if [ "$$(stat -f -c %T $$base)" = tmpfs ]; then base=$(CURDIR); fi; \
	  $(BIN)/engine-bench -dir $$base -time $(ENGINETIME) -rounds $(ENGINEROUNDS)

# bench-peers: strata beside nginx proxy_cache, Varnish and Traffic Server
# on the sample origin, with the bare fasthttp handler as the reference
# ceiling; installs the peers and wrk if missing. Prints CPU per request
# per system and a summary table (strata ÷ best peer per scenario).
# SCENARIOS=1a,3 runs a subset, SYSTEMS=strata,bare,nginx some systems;
# empty runs all. PEERS_ARGS passes more flags (-duration 3s, -mem ...).
SCENARIOS ?=
SYSTEMS ?=
PEERS_ARGS ?=
bench-peers: build build-bench
	$(BIN)/peerbench -scenarios "$(SCENARIOS)" -systems "$(SYSTEMS)" $(PEERS_ARGS)

# bench-hybrid runs bench/hybrid-bench's standard workload, scaled to a
# 2-core machine, once per runtime mode on one temporary file (on a real
# file system, as bench), then prints the three Total blocks side by side
# with foyer-bench's published figures as targets. HB_OUT=dir keeps the JSON files.
HB_TIME ?= 30
HB_ARGS ?= --mem 64MiB --disk 1GiB --region-size 16MiB --entry-size-min 2KiB --entry-size-max 64KiB \
  --writers 4 --readers 4 --get-range 10000 --w-rate 16MiB --r-rate 16MiB --admission-rate-limit 32MiB \
  --flushers 2 --reclaimers 1 --warm-up 5 --report-interval 10
HB_MODES ?= disabled unified separated
bench-hybrid:
	@mkdir -p $(BIN)
	cd bench && $(GO) build -o ../$(BIN)/hybrid-bench ./hybrid-bench
	@base=$${TMPDIR:-/tmp}; \
	  if [ "$$(stat -f -c %T $$base)" = tmpfs ]; then base=$(CURDIR); fi; \
	  dir=$$(mktemp -d -p $$base hybrid-bench.XXXXXX) || exit 1; \
	  rc=0; files=; \
	  for rt in $(HB_MODES); do \
	    echo "== hybrid-bench --runtime $$rt"; \
	    $(BIN)/hybrid-bench --file $$dir/dev $(HB_ARGS) --time $(HB_TIME) --runtime $$rt --json $$dir/$$rt.json || rc=1; \
	    files="$$files $$dir/$$rt.json"; \
	  done; \
	  if [ $$rc = 0 ]; then echo "== side by side"; $(BIN)/hybrid-bench --compare $$files || rc=1; fi; \
	  if [ -n "$(HB_OUT)" ]; then mkdir -p $(HB_OUT) && cp $$files $(HB_OUT)/; fi; \
	  rm -rf $$dir; exit $$rc

clean:
	rm -rf $(BIN)

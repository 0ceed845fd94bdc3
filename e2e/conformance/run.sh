#!/bin/sh
# run.sh: `make conformance`. Installs the public HTTP caching test suite
# (npm package http-cache-tests, pinned below) into e2e/conformance/.suite
# (ignored by git; reused while the version matches), then runs
# TestConformance (e2e/conformance_test.go), which starts the suite's
# origin and strata on loopback, runs the suite's CLI against strata, and
# prints required tests passed per suite beside baseline.json; fewer than
# the baseline fails. Without node and npm it skips (exit 0).
# STRATA_CONFORMANCE_UPDATE=1 rewrites the baseline with today's scores.
set -eu
VERSION=0.4.5
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "conformance: skipped: node and npm are not installed"
	exit 0
fi
dir=$here/.suite
pkg=$dir/node_modules/http-cache-tests
have=$(node -p "try { require('$pkg/package.json').version } catch (e) { '' }")
if [ "$have" != "$VERSION" ]; then
	echo "conformance: installing http-cache-tests@$VERSION into $dir"
	rm -rf "$dir"
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "http-cache-tests@$VERSION"
fi
cd "$root"
STRATA_CONFORMANCE_SUITE=$pkg STRATA_CONFORMANCE_OUT=${STRATA_CONFORMANCE_OUT:-$here/out} \
	${GO:-go} test -count=1 -v -run '^TestConformance$' ./e2e

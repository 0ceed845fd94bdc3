#!/bin/sh
# make demo: strata in front of the sample origin, shown with curl.
#
# Starts bin/origin and bin/strata on loopback (free ports, a temporary
# data directory, a 4 MiB memory tier; the embedded default config
# otherwise), then shows a miss, a memory hit, a disk hit, a no-store pass
# and a few metrics, printing each curl command before what it returned.
# Both processes are stopped by pid on every path (exit, error, Ctrl-C).
#
# Usage: cmd/demo/demo.sh [BIN_DIR]   (default: bin; run `make build` first)
set -eu

BIN=${1:-bin}
for b in "$BIN/strata" "$BIN/origin"; do
	[ -x "$b" ] || { echo "demo: $b not found: run make build" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "demo: curl is needed (apt-get install curl)" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-demo.XXXXXX")
ORIGIN_PID= STRATA_PID=
cleanup() {
	for pid in $STRATA_PID $ORIGIN_PID; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# await_listener LOG NAME: print the URL NAME listens on, once LOG says so
# (up to 10 s).
await_listener() {
	i=0
	while [ $i -lt 100 ]; do
		url=$(sed -n "s#.*$2 listening on \(http://[^ ]*\).*#\1#p" "$1" 2>/dev/null | head -n 1)
		if [ -n "$url" ]; then echo "$url"; return 0; fi
		sleep 0.1
		i=$((i + 1))
	done
	echo "demo: $2 did not start; its log:" >&2
	cat "$1" >&2
	return 1
}

# headers URL: GET URL; print the status line and the headers that tell
# what the cache did.
headers() {
	curl -sS -D - -o /dev/null "$1" | tr -d '\r' | grep -Ei '^(HTTP/|age:|cache-status:|cache-control:|content-length:)' | sed 's/^/    /'
}

# show URL: print the curl command, then what headers prints.
show() {
	echo "\$ curl -sS -D - -o /dev/null '$1'"
	headers "$1"
}

echo "== starting the sample origin and strata (data in $TMP)"
"$BIN/origin" -listen 127.0.0.1:0 2>"$TMP/origin.log" &
ORIGIN_PID=$!
ORIGIN=$(await_listener "$TMP/origin.log" origin)
"$BIN/strata" -listen 127.0.0.1:0 -admin-listen 127.0.0.1:0 -origin "$ORIGIN" \
	-cache-path "$TMP/data/strata.cache" -cache-size 128MiB -mem 4MiB 2>"$TMP/strata.log" &
STRATA_PID=$!
PROXY=$(await_listener "$TMP/strata.log" strata)
ADMIN=$(await_listener "$TMP/strata.log" admin)
echo "origin: $ORIGIN   strata: $PROXY   admin: $ADMIN"
echo

echo "== 1. a miss: strata fetches from the origin, streams it to us and stores it"
show "$PROXY/obj/64k?max-age=300"
echo
echo "== 2. the same URL again: a memory hit (Age counts the seconds since it was fetched)"
show "$PROXY/obj/64k?max-age=300"
echo

echo "== 3. a disk hit: store one object, push it out of the 4 MiB memory tier"
echo "==    with 40 others of 256 KiB (evicted entries are written to disk), ask again"
show "$PROXY/obj/200k/cold?max-age=300"
echo "\$ for n in \$(seq 40); do curl -s -o /dev/null '$PROXY/obj/256k?max-age=300&n='\$n; done"
for n in $(seq 40); do curl -sS -o /dev/null "$PROXY/obj/256k?max-age=300&n=$n"; done
# The eviction is written by a background flusher; a disk hit is copied
# back into memory, so the first disk hit is the one to show. Retry briefly
# in case the eviction has not happened yet.
echo "\$ curl -sS -D - -o /dev/null '$PROXY/obj/200k/cold?max-age=300'"
i=0
while :; do
	out=$(headers "$PROXY/obj/200k/cold?max-age=300")
	case $out in *detail=disk*) break ;; esac
	i=$((i + 1))
	[ $i -lt 50 ] || break
	sleep 0.1
done
echo "$out"
echo

echo "== 4. a response marked no-store passes through and is never stored"
show "$PROXY/obj/1k?no-store"
show "$PROXY/obj/1k?no-store"
echo

echo "== 5. metrics (Prometheus, on the admin listener)"
echo "\$ curl -s $ADMIN/metrics | grep -E '^strata_(requests_total|cache_memory_hits|disk_hits|disk_written_bytes)'"
curl -sS "$ADMIN/metrics" | grep -E '^strata_(requests_total|cache_memory_hits_total|disk_hits_total|disk_written_bytes_total)' | sed 's/^/    /'
echo

echo "== stopping strata (SIGTERM: drain, flush, close the device) and the origin"
kill -TERM "$STRATA_PID"
wait "$STRATA_PID" || { echo "demo: strata exited with status $?" >&2; cat "$TMP/strata.log" >&2; exit 1; }
STRATA_PID=
grep 'shutdown:' "$TMP/strata.log" | sed 's/^/    /'
echo "demo done"

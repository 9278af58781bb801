#!/usr/bin/env bash
# Checks the README's set-up the way a fresh machine meets it: clones the
# repository's committed HEAD into a temporary directory and runs ./demo.sh
# there with empty GOPATH, GOMODCACHE and GOCACHE, so that nothing this
# machine downloaded or built before can hide a broken install step. Fails
# unless the report names minijit's generations. With --test it then runs
# ./test.sh in the same clone, with the same empty caches.
#
# Run it whenever set-up changes (scripts/setup.sh, go.mod, demo.sh,
# test.sh). It prints how long each step took.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
run_tests=false
[ "${1:-}" = --test ] && run_tests=true

tmp=$(mktemp -d /tmp/jitprof-fresh.XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
git clone -q "$repo" "$tmp/src"
mkdir -p "$tmp/gopath" "$tmp/gomodcache" "$tmp/gocache"
export GOPATH=$tmp/gopath GOMODCACHE=$tmp/gomodcache GOCACHE=$tmp/gocache
export GOFLAGS=-modcacherw

start=$(date +%s)
if ! (cd "$tmp/src" && DEMO_DIR="$tmp/demo" ./demo.sh) >"$tmp/demo.out" 2>&1; then
	cat "$tmp/demo.out"
	echo "fresh-check: ./demo.sh failed in a fresh clone" >&2
	exit 1
fi
demo_secs=$(($(date +%s) - start))
gens=$(grep -o '[A-Za-z_][A-Za-z0-9_]* \[gen [0-9]*\]' "$tmp/demo.out" | sort -u | wc -l)
if [ "$gens" -lt 4 ]; then
	cat "$tmp/demo.out"
	echo "fresh-check: the report names $gens generations of minijit's functions, want at least 4" >&2
	exit 1
fi
echo "fresh-check: ./demo.sh in a fresh clone with empty Go caches: ${demo_secs}s, $gens JIT generations named"

if $run_tests; then
	start=$(date +%s)
	if ! (cd "$tmp/src" && CI=true ./test.sh) >"$tmp/test.out" 2>&1; then
		# The clone goes; its log stays, and the failures are shown first.
		log=$(mktemp /tmp/jitprof-fresh-test.XXXXXX.log)
		cp "$tmp/test.out" "$log"
		tail -60 "$log"
		echo "== failures"
		grep -nE -A12 '^(--- FAIL|panic:|FAIL)' "$log" | head -150
		echo "fresh-check: ./test.sh failed in a fresh clone; its whole output is in $log" >&2
		exit 1
	fi
	echo "fresh-check: ./test.sh in a fresh clone: $(($(date +%s) - start))s"
fi

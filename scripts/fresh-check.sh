#!/usr/bin/env bash
# Checks the README's set-up the way a fresh machine meets it: clones the
# repository's committed HEAD into a temporary directory and runs ./demo.sh
# there with empty GOPATH, GOMODCACHE and GOCACHE, so that nothing this
# machine downloaded or built before can hide a broken install step. Fails
# unless the report names minijit's generations.
#
#   scripts/fresh-check.sh [--test] [--repeat N] [--load] [--gomaxprocs N] [--count N] [--cache DIR]
#
#   --test          then run ./test.sh (CI=true: no real-tool test may
#                   skip) in the same clone, with the same empty caches
#   --repeat N      do it all N times, each in a new clone with new empty
#                   caches; stop at the first failure
#   --load          keep every CPU busy while ./test.sh runs (stress-ng
#                   --cpu with one worker per CPU, from scripts/setup.sh
#                   test), as a loaded CI machine would
#   --gomaxprocs N  run ./test.sh with GOMAXPROCS=N (1: the tests and the
#                   programs they start see one CPU)
#   --count N       after ./test.sh, run the tests of the packages that
#                   record (those that import internal/perftest) N more
#                   times each (go test -race -count=N)
#   --cache DIR     keep the Go caches (GOPATH, GOMODCACHE, GOCACHE) in DIR
#                   instead of empty ones, and leave them there: the first
#                   check with a new DIR starts as empty as without it,
#                   later ones with the same DIR skip the download and the
#                   compiling (still a fresh clone each). For a series of
#                   test runs, where the set-up was checked by the first.
#
# A sampling test that passes on this machine but not on one several
# times faster or slower, or loaded, is a broken test; these options are
# how to meet those machines here. Run it whenever set-up changes
# (scripts/setup.sh, go.mod, demo.sh, test.sh). It prints how long each
# step took, and on a failure keeps the whole log and shows the failures.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	echo "usage: scripts/fresh-check.sh [--test] [--repeat N] [--load] [--gomaxprocs N] [--count N] [--cache DIR]" >&2
	exit 2
}
run_tests=false repeat=1 load=false gomaxprocs='' count='' cache=''
while [ $# -gt 0 ]; do
	case $1 in
	--test) run_tests=true ;;
	--repeat) repeat=${2:-}; shift ;;
	--load) load=true ;;
	--gomaxprocs) gomaxprocs=${2:-}; shift ;;
	--count) count=${2:-}; shift ;;
	--cache) cache=${2:-}; [ -n "$cache" ] || usage; cache=$(realpath -m "$cache"); shift ;;
	*) usage ;;
	esac
	shift
done
for n in "$repeat" ${gomaxprocs:+"$gomaxprocs"} ${count:+"$count"}; do
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
done
if { $load || [ -n "$gomaxprocs" ] || [ -n "$count" ]; } && ! $run_tests; then
	echo "fresh-check: --load, --gomaxprocs and --count apply to --test" >&2
	exit 2
fi
if $load && ! command -v stress-ng >/dev/null 2>&1; then
	echo "fresh-check: --load needs stress-ng (scripts/setup.sh test installs it)" >&2
	exit 1
fi

tmp='' hog=''
cleanup() {
	[ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null
	[ -n "$tmp" ] && { chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"; }
	return 0
}
trap cleanup EXIT

# fail LOG MESSAGE: keeps the log, shows its end and its failures.
fail() {
	local log
	log=$(mktemp /tmp/jitprof-fresh-test.XXXXXX.log)
	cp "$1" "$log"
	tail -60 "$log"
	echo "== failures"
	grep -nE -A12 '^(--- FAIL|panic:|FAIL|fuzz-smoke: .* crashed)' "$log" | head -150 || true
	echo "fresh-check: $2; its whole output is in $log" >&2
	exit 1
}

# one RUN: a clone, the demo, and with --test the tests.
one() {
	local run=$1 start secs gens
	tmp=$(mktemp -d /tmp/jitprof-fresh.XXXXXX)
	git clone -q "$repo" "$tmp/src"
	local caches=$tmp what="empty Go caches"
	if [ -n "$cache" ]; then
		caches=$cache
		[ -d "$cache/gocache" ] && what="the Go caches in $cache"
	fi
	mkdir -p "$caches/gopath" "$caches/gomodcache" "$caches/gocache"
	export GOPATH=$caches/gopath GOMODCACHE=$caches/gomodcache GOCACHE=$caches/gocache
	export GOFLAGS=-modcacherw

	start=$(date +%s)
	if ! (cd "$tmp/src" && DEMO_DIR="$tmp/demo" ./demo.sh) >"$tmp/demo.out" 2>&1; then
		fail "$tmp/demo.out" "run $run: ./demo.sh failed in a fresh clone"
	fi
	secs=$(($(date +%s) - start))
	gens=$(grep -o '[A-Za-z_][A-Za-z0-9_]* \[gen [0-9]*\]' "$tmp/demo.out" | sort -u | wc -l)
	if [ "$gens" -lt 4 ]; then
		fail "$tmp/demo.out" "run $run: the report names $gens generations of minijit's functions, want at least 4"
	fi
	echo "fresh-check: run $run: ./demo.sh in a fresh clone with $what: ${secs}s, $gens JIT generations named"

	if $run_tests; then
		local how=()
		$load && how+=("under stress-ng --cpu $(nproc)")
		[ -n "$gomaxprocs" ] && how+=("GOMAXPROCS=$gomaxprocs")
		if $load; then
			stress-ng --cpu "$(nproc)" --quiet >/dev/null 2>&1 &
			hog=$!
		fi
		start=$(date +%s)
		if ! (cd "$tmp/src" && env CI=true ${gomaxprocs:+GOMAXPROCS=$gomaxprocs} ./test.sh) >"$tmp/test.out" 2>&1; then
			fail "$tmp/test.out" "run $run: ./test.sh failed in a fresh clone${how:+ (${how[*]})}"
		fi
		echo "fresh-check: run $run: ./test.sh in a fresh clone${how:+ (${how[*]})}: $(($(date +%s) - start))s"
		# What test.sh warns of (perf maps the tests left in /tmp) is kept
		# in sight when it passes.
		sed -n '/^warning: /,/^== /p' "$tmp/test.out" | grep -v '^== ' || true
		if [ -n "$count" ]; then
			local pkgs
			pkgs=$(cd "$tmp/src" && go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
				awk '/internal\/perftest/ && $1 !~ /internal\/perftest$/ { print $1 }')
			start=$(date +%s)
			# test.sh's own perf build-id cache, so the repeated runs do
			# not fill root's ~/.debug either.
			mkdir -p "$tmp/perf"
			printf '[buildid]\n\tdir = %s/perf/buildid\n' "$tmp" >"$tmp/perf/config"
			# shellcheck disable=SC2086 # one word a package
			if ! (cd "$tmp/src" && env CI=true PERF_CONFIG="$tmp/perf/config" ${gomaxprocs:+GOMAXPROCS=$gomaxprocs} \
				go test -race -count="$count" -timeout 60m $pkgs) >"$tmp/count.out" 2>&1; then
				fail "$tmp/count.out" "run $run: go test -count=$count of the packages that record failed${how:+ (${how[*]})}"
			fi
			echo "fresh-check: run $run: go test -race -count=$count of $(wc -w <<<"$pkgs") packages that record${how:+ (${how[*]})}: $(($(date +%s) - start))s"
		fi
		if [ -n "$hog" ]; then
			kill "$hog" 2>/dev/null
			wait "$hog" 2>/dev/null || true
			hog=''
		fi
	fi
	cleanup
	tmp=''
}

for run in $(seq "$repeat"); do
	one "$run"
done
[ "$repeat" -gt 1 ] && echo "fresh-check: $repeat runs passed"
exit 0

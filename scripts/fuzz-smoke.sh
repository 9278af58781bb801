#!/usr/bin/env bash
# Runs every fuzz target in the module briefly, so that a target that
# finds a crash, or stalls (slow on each input), is
# noticed. docs/fuzzing.md lists the targets.
#
#   scripts/fuzz-smoke.sh [-t SECONDS] [-r MIN_RATE] [REGEXP]
#
# Targets are found by looking for `func FuzzX(` in the module's _test.go
# files, so a new target is included without editing this script; REGEXP,
# when given, keeps those whose "dir.FuzzX" name it matches.
#
# Each target runs for SECONDS (default 10) with -fuzzminimizetime 100x,
# from its seeds and checked-in inputs only (a fresh cache directory, not
# what earlier runs found). It fails when it crashes, and when it is
# stalled: fewer than MIN_RATE inputs (default 50) per second of the CPU
# time the run took, or fewer than one a second of wall time (a target
# that mostly waits uses little CPU). Both limits hold whatever the load:
# CPU time, not wall time, and minimisation bounded by a count of inputs,
# not by time. With -fuzzminimizetime 1s, each new input the fuzzer found
# was minimised for a second of wall time, its runs not counted: a few new
# inputs filled the 10 s under load (pypylog FuzzRead: 26 inputs in 8.8
# CPU s beside stress-ng --cpu 4, 44,000-64,000 with 100x). A target slow
# on each input still falls far below. A crash's input is written under
# the package's testdata/fuzz/FuzzX/, as go test does: check it in with
# the fix.
#
# Prints each target's inputs run, per second, and per CPU second.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=10
min_rate=50
while getopts t:r: opt; do
	case $opt in
	t) secs=$OPTARG ;;
	r) min_rate=$OPTARG ;;
	*)
		echo "usage: scripts/fuzz-smoke.sh [-t SECONDS] [-r MIN_RATE] [REGEXP]" >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
filter=${1:-}
[ -x /usr/bin/time ] || {
	echo "fuzz-smoke: needs /usr/bin/time (scripts/setup.sh test installs it)" >&2
	exit 1
}

tmp=$(mktemp -d /tmp/jitprof-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# "dir FuzzX" for every target, sorted.
targets=$(git ls-files --cached --others --exclude-standard '*_test.go' |
	xargs grep -Ho '^func Fuzz[A-Za-z0-9_]*(' |
	sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($|\1 \2|; s|^[^/ ]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($|. \1|' |
	sort -u)
if [ -z "$targets" ]; then
	echo "fuzz-smoke: no fuzz targets found" >&2
	exit 1
fi

failed=()
ran=0
printf '%-22s %-18s %9s %8s %10s\n' package target inputs "per s" "per CPU s"
while read -r dir name; do
	if [ -n "$filter" ] && ! [[ "$dir.$name" =~ $filter ]]; then
		continue
	fi
	ran=$((ran + 1))
	out=$tmp/$ran.out
	fuzz=(go test -run='^$' -fuzz="^$name\$" -fuzzminimizetime=100x "./$dir")
	# Build the instrumented test binary first, so that the timed run's
	# CPU time is the fuzzing's.
	"${fuzz[@]}" -fuzztime=1x -args -test.fuzzcachedir="$tmp/cache/build$ran" >/dev/null 2>&1 || true
	status=ok
	if ! /usr/bin/time -f '%U %S' -o "$tmp/$ran.cpu" "${fuzz[@]}" -fuzztime="${secs}s" \
		-args -test.fuzzcachedir="$tmp/cache/$ran" >"$out" 2>&1; then
		status=FAILED
		# Go 1.26's coordinator can report its own -fuzztime deadline as
		# a failure (go.dev/issue/75804): no input failed then.
		if grep -q '^    context deadline exceeded$' "$out" &&
			! grep -q -e 'Failing input written' -e '^panic:' -e '--- FAIL: .*/' "$out"; then
			status=ok
		fi
	fi
	# The last progress line: "fuzz: elapsed: 10s, execs: 12345 (...)".
	last=$(grep -E '^fuzz: elapsed: [0-9]+s, execs: [0-9]+' "$out" | tail -1 || true)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	elapsed=$(sed -nE 's/^fuzz: elapsed: ([0-9]+)s.*/\1/p' <<<"$last")
	cpu=$(tail -1 "$tmp/$ran.cpu" | awk '{ printf "%.2f", $1 + $2 }')
	read -r rate cpu_rate < <(awk -v n="${execs:-0}" -v e="${elapsed:-0}" -v c="$cpu" \
		'BEGIN { printf "%d %d\n", (e > 0 ? n / e : 0), (c > 0 ? n / c : 0) }')
	if [ $status = ok ] && { [ "$cpu_rate" -lt "$min_rate" ] || [ "${execs:-0}" -lt "$secs" ]; }; then
		status=STALLED
	fi
	printf '%-22s %-18s %9d %8d %10d %s\n' "$dir" "$name" "${execs:-0}" "$rate" "$cpu_rate" \
		"$([ $status = ok ] || echo "$status ($cpu CPU s)")"
	if [ $status != ok ]; then
		failed+=("$dir $name")
		sed 's/^/    /' "$out" | tail -40
	fi
done <<<"$targets"

if [ $ran -eq 0 ]; then
	echo "fuzz-smoke: no target matches $filter" >&2
	exit 1
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz-smoke: ${#failed[@]} of $ran targets crashed or stalled (under $min_rate inputs per CPU second or one a second):" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz-smoke: $ran targets ran"

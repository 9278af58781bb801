#!/usr/bin/env bash
# Compares the disturbance of jitprof record and perf record on a CPU-bound
# C workload in one run: wall time alone, under perf and under jitprof at
# -F 999 and -F 4999, with and without -g; and the fixed cost of
# recording `true`. Prints a table and writes the record section of
# bench/RESULTS.md.
# Usage: bench/record/run.sh [RUNS] (default 5; the median is reported).
set -euo pipefail
runs=${1:-5}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gcc -O1 -fno-omit-frame-pointer -o "$tmp/work" "$here/work.c"
(cd "$root" && go build -o "$tmp/jitprof" ./cmd/jitprof)
iters=3000

# wall SECONDS of one run of "$@", output discarded.
wall() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo "scale=4; ($t1 - $t0) / 1000000000" | bc
}

# median here reads stdin, unlike lib.sh's, which takes arguments.
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

declare -A cmds=(
	[alone]="$tmp/work $iters"
	[perf-F999]="perf record -q -F 999 -o $tmp/p.data -- $tmp/work $iters"
	[perf-F4999]="perf record -q -F 4999 -o $tmp/p.data -- $tmp/work $iters"
	[perf-F999-g]="perf record -q -g -F 999 -o $tmp/p.data -- $tmp/work $iters"
	[perf-F4999-g]="perf record -q -g -F 4999 -o $tmp/p.data -- $tmp/work $iters"
	[jitprof-F999]="$tmp/jitprof record -q -F 999 -o $tmp/j.data -- $tmp/work $iters"
	[jitprof-F4999]="$tmp/jitprof record -q -F 4999 -o $tmp/j.data -- $tmp/work $iters"
	[jitprof-F999-g]="$tmp/jitprof record -q -g -F 999 -o $tmp/j.data -- $tmp/work $iters"
	[jitprof-F4999-g]="$tmp/jitprof record -q -g -F 4999 -o $tmp/j.data -- $tmp/work $iters"
	[perf-true]="perf record -q -o $tmp/p.data -- true"
	[jitprof-true]="$tmp/jitprof record -q -o $tmp/j.data -- true"
)
order=(alone perf-F999 jitprof-F999 perf-F4999 jitprof-F4999 perf-F999-g jitprof-F999-g perf-F4999-g jitprof-F4999-g perf-true jitprof-true)

# Interleave the configurations so load from others on the machine hits
# them alike.
for ((i = 0; i < runs; i++)); do
	for c in "${order[@]}"; do
		# shellcheck disable=SC2086
		wall ${cmds[$c]} >>"$tmp/$c.times"
	done
done

declare -A med
for c in "${order[@]}"; do med[$c]=$(median <"$tmp/$c.times"); done
ratio() { echo "scale=3; ${med[$1]} / ${med[alone]}" | bc; }

{
	echo "## jitprof record vs perf record (bench/record/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, $(perf version), median of $runs interleaved runs."
	echo "Workload: bench/record/work.c ($iters iterations, one thread, CPU-bound, about 2.4 s alone); wall time in seconds."
	echo
	echo "| configuration | perf record | ratio to alone | jitprof record | ratio to alone |"
	echo "|---|---|---|---|---|"
	echo "| workload alone | ${med[alone]} | 1 | | |"
	for f in F999 F4999 F999-g F4999-g; do
		echo "| -${f/-g/ -g} | ${med[perf-$f]} | $(ratio perf-$f) | ${med[jitprof-$f]} | $(ratio jitprof-$f) |"
	done
	echo "| start-up + shut-down (\`record -- true\`) | ${med[perf-true]} | | ${med[jitprof-true]} | |"
	echo
	echo "The ratios include each recorder's fixed start-up and shut-down cost (last row)."
} | tee "$tmp/section.md"

{
	echo
	echo "Per-record cost of the drain path (\`go test -bench Handle ./internal/record\`):"
	echo
	echo '```'
	(cd "$root" && go test -run '^$' -bench Handle ./internal/record) | grep '^Benchmark'
	echo '```'
} | tee -a "$tmp/section.md"
update_section record "$tmp/section.md"

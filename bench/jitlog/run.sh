#!/usr/bin/env bash
# What the JIT data logger costs a JIT, Go package and C agent in one run:
#   go test -bench (code load, enter, exit, jitdump, read), three times
#   make -C agent bench (the C agent beside clock_gettime, rdtsc and a
#   jitdump write(2)), three times
# and writes the medians to the jitlog section of bench/RESULTS.md.
# Targets (issue 6): code load under 300 ns median from 4 threads; enter
# and exit under 30 ns each.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

go test -run XXX -bench 'CodeLoad|Enter|Exit' -benchtime 2000000x -count 3 ./jitlog >"$dir/go.txt"
go test -run XXX -bench 'Read' -count 3 ./jitlog >>"$dir/go.txt"
make -s -C agent OUT="$dir" "$dir/jitlog_bench"
for i in 1 2 3; do "$dir/jitlog_bench" >>"$dir/c.txt"; done

# gofield BENCH UNIT: the median of BENCH's UNIT column ("" if absent).
gofield() {
	local vals
	vals=$(awk -v b="$1" -v u="$2" '$1 ~ "^Benchmark" b "(-[0-9]+)?$" { for (i = 3; i < NF; i++) if ($(i+1) == u) print $i }' "$dir/go.txt")
	[ -n "$vals" ] && median $vals || true
}
# cfield OP THREADS FIELD: the median p50 or p99 of the C agent's OP.
cfield() {
	local vals
	vals=$(awk -v op="$1" -v th="$2" -v f="$3" '
		index($0, op) == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^thread/ && $(i-1) == th) { for (j = i; j <= NF; j++) if ($j == f) print $(j+1) } }' "$dir/c.txt")
	median $vals
}

out="$dir/section.md"
{
	echo "## jitlog (bench/jitlog/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, $(go version | awk '{print $3}'), $(gcc --version | head -1), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource). Database on $(df --output=fstype /tmp | tail -1) /tmp. Medians of three runs."
	echo
	echo "C agent: per call, the median (p50) and 99th percentile over batches of 64 calls of the mean time per call one thread saw."
	echo
	echo "| C operation | threads | p50 ns | p99 ns |"
	echo "|---|---|---|---|"
	for row in "jitlog code load (64-byte name)|1" "jitlog code load (64-byte name)|4" \
		"jitdump code load, write(2) each|1" "jitdump code load, write(2) each|4" \
		"clock_gettime(CLOCK_MONOTONIC) alone|1" "rdtsc alone|1" \
		"jitlog enter|1" "jitlog exit|1" "jitlog enter|4"; do
		op=${row%|*} th=${row#*|}
		grep -q "^$op" "$dir/c.txt" || continue
		echo "| $op | $th | $(cfield "$op" "$th" p50) | $(cfield "$op" "$th" p99) |"
	done
	echo
	echo "Go package: mean ns/op (total time over calls, growing the file and faulting its pages in included); the 4-goroutine benchmarks also report p50/p99 as above. Read allocates the records it returns."
	echo
	echo "| Go benchmark | mean ns/op | p50 ns | p99 ns | allocs/op |"
	echo "|---|---|---|---|---|"
	for b in CodeLoad CodeLoad4 Enter Exit EnterExit4 JitdumpCodeLoad JitdumpCodeLoad4 CodeLoadWithJitdump; do
		echo "| $b | $(gofield "$b" ns/op) | $(gofield "$b" p50-ns/op) | $(gofield "$b" p99-ns/op) | $(gofield "$b" allocs/op) |"
	done
	echo "| Read (snapshot reader) | $(gofield Read MB/s) MB/s | | | $(gofield Read allocs/op) |"
	echo
	echo "EnterExit4 is an enter and an exit: halve it for one call. Before commits aef3519 and f2b2d7b (one compare-and-swap, MOV release stores, prefetch; measured beside them in one run), Go enter and exit p50 were 36.7 and 34.6 ns on one goroutine and 37.9 each from 4."
} >"$out"
update_section jitlog "$out"
cat "$out"

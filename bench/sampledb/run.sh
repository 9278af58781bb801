#!/usr/bin/env bash
# The sample database's costs, from its Go benchmarks (five runs each,
# medians), written to the sampledb section of bench/RESULTS.md:
#   BenchmarkAdd       the ingest path, a resolved sample to its count in
#                      memory (target, issue 13: 5 million samples per
#                      second per core, no allocation)
#   BenchmarkFlush     a flush of N open files with 100 new counts each
#   BenchmarkFileSize  a sample file's bytes per distinct key
# Rates are per CPU second (getrusage), not per wall second: on a machine
# other jobs keep busy, wall time counts the waiting for a CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -run XXX -bench 'Add|Flush|FileSize' -count 5 ./internal/sampledb >"$dir/go.txt"

# field BENCH UNIT: the median of BENCH's UNIT column.
field() {
	local vals
	vals=$(awk -v b="$1" -v u="$2" '$1 ~ "^Benchmark" b "(-[0-9]+)?$" { for (i = 3; i < NF; i++) if ($(i+1) == u) print $i }' "$dir/go.txt")
	[ -n "$vals" ] && median $vals || true
}

out="$dir/section.md"
{
	echo "## sample database (bench/sampledb/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, $(go version | awk '{print $3}'), load average $(cut -d' ' -f1 /proc/loadavg) at the end. Medians of five runs of \`go test -bench 'Add|Flush|FileSize' ./internal/sampledb\`; CPU time from getrusage."
	echo
	echo "Ingest (\`DB.Add\`: a resolved sample to its count in its file's table in memory, steady state). 40 images, threads running an application and three libraries each, 5000 offsets per image drawn from a Zipf distribution, runs of 16 samples per thread as a ring delivers them; *scattered*: every sample from another thread. Target: 5 million samples per second per core, no allocation."
	echo
	echo "| --separate | threads | files | CPU ns per sample | million samples per CPU second | wall ns per sample | allocs per sample |"
	echo "|---|---|---|---|---|---|---|"
	for row in "none|16" "lib,thread|16" "all|64" "all/scattered|64"; do
		b=${row%|*} th=${row#*|}
		echo "| $b | $th | $(printf %.0f "$(field "Add/$b" files)") | $(field "Add/$b" cpu-ns/op) | $(field "Add/$b" M/cpu-s) | $(field "Add/$b" ns/op) | $(field "Add/$b" allocs/op) |"
	done
	echo
	echo "Flush (\`DB.Flush\`): N open files, 100 keys counted in each since the last flush, the session's metadata rewritten."
	echo
	echo "| open files | CPU µs per flush | CPU µs per file | allocs per flush |"
	echo "|---|---|---|---|"
	for n in 10 100 1000; do
		us=$(awk -v v="$(field "Flush/files=$n" cpu-ns/op)" 'BEGIN { printf "%.0f", v / 1000 }')
		per=$(awk -v v="$(field "Flush/files=$n" cpu-ns/file)" 'BEGIN { printf "%.1f", v / 1000 }')
		echo "| $n | $us | $per | $(field "Flush/files=$n" allocs/op) |"
	done
	echo
	echo "File size: bytes of a sample file per distinct key after n keys are written (the table doubles: 32 bytes a slot, half to all of them used, and the 512-byte header; on disk a file takes at least one 4 KiB block). Writing a million keys into a new file, growth included: $(field "FileSize/keys=1000000" ns/insert) ns a key."
	echo
	echo "| keys | bytes per key |"
	echo "|---|---|"
	for n in 100 10000 1000000; do
		echo "| $n | $(field "FileSize/keys=$n" bytes/key) |"
	done
} >"$out"
update_section sampledb "$out"
cat "$out"

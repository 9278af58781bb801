#!/usr/bin/env bash
# How fast jitprof report is against perf report on the same big file in
# the same run. Records ~1.8 million samples system-wide with -g while the
# busy workload runs (about 20 s), then times, three times each:
#   jitprof report -l        vs perf report --stdio --no-children -g none --sort dso,sym
#   jitprof report -l -g     vs perf report --stdio --children --sort dso,sym
# and writes the medians to the report section of bench/RESULTS.md.
# The target (issue 4) is at most 1/5 of perf's time, with less max RSS.
# KEEP=DIR keeps the recording in DIR (for JITPROF_BENCH_DATA benchmarks).
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
big_recording
[ -n "${KEEP:-}" ] && cp "$dir/big.data" "$KEEP/"

names=(jp_flat perf_flat jp_graph perf_graph)
declare -A t m label
label[jp_flat]='jitprof report -l'
label[perf_flat]='perf report --stdio --no-children -g none --sort dso,sym'
label[jp_graph]='jitprof report -l -g'
label[perf_graph]='perf report --stdio --children --sort dso,sym'
for name in "${names[@]}"; do
	times=() mems=()
	for i in 1 2 3; do
		case $name in
		jp_flat) r=$(measure "$dir/jitprof" report -i "$dir/big.data" -l) ;;
		perf_flat) r=$(measure perf report -i "$dir/big.data" --stdio --no-children -g none --sort dso,sym) ;;
		jp_graph) r=$(measure "$dir/jitprof" report -i "$dir/big.data" -l -g) ;;
		perf_graph) r=$(measure perf report -i "$dir/big.data" --stdio --children --sort dso,sym) ;;
		esac
		times+=("${r% *}") mems+=("${r#* }")
	done
	t[$name]=$(median "${times[@]}")
	m[$name]=$(median "${mems[@]}")
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}'; }
out="$dir/section.md"
{
	echo "## report (bench/report/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, $(perf --version). File: $samples samples, ${size_mb} MB, perf record -a -g -c 20000 while the busy workload runs."
	echo
	echo "| what | median seconds (3 runs) | max RSS MB | time vs perf (target ≤ 0.20) |"
	echo "|---|---|---|---|"
	echo "| ${label[jp_flat]} | ${t[jp_flat]} | $(( ${m[jp_flat]} / 1024 )) | $(ratio "${t[jp_flat]}" "${t[perf_flat]}") |"
	echo "| ${label[perf_flat]} | ${t[perf_flat]} | $(( ${m[perf_flat]} / 1024 )) | 1.00 |"
	echo "| ${label[jp_graph]} | ${t[jp_graph]} | $(( ${m[jp_graph]} / 1024 )) | $(ratio "${t[jp_graph]}" "${t[perf_graph]}") |"
	echo "| ${label[perf_graph]} | ${t[perf_graph]} | $(( ${m[perf_graph]} / 1024 )) | 1.00 |"
	echo
	# Where the flat report's time goes, from a CPU profile of
	# BenchmarkLoad/flat in internal/replay on such a file (measured
	# when the one-pass flat read was written; see internal/replay/flat.go).
	echo "How the flat report gets there (CPU profile of go test -bench Load/flat ./internal/replay on a 1.9M-sample, 175 MB file, 2026-11-22: about 0.15 s of CPU and 0.08 s of wall per load): one parallel pass over the file summing samples by place (pid, tid, CPU, address, event), ~83 ms of CPU over the two cores, most of it the first touch of each record even with reading 2 KiB ahead; /proc/kallsyms ~46 ms of CPU (half of it the kernel writing the file), overlapped with the pass; then the timeline from the few process and mapping records, each of the ~1100 places resolved once, and the images' symbol tables (~9 ms). Before it, a serial timeline pass and a second, per-sample pass made it 0.27 of perf's time."
	echo
	echo "Go benchmarks on the same file (JITPROF_BENCH_DATA, go test -bench . ./internal/report ./internal/replay):"
	echo
	echo '```'
	JITPROF_BENCH_DATA="$dir/big.data" go test -run XXX -bench . -benchtime 3x ./internal/report ./internal/replay | grep -E '^Benchmark'
	echo '```'
} >"$out"
cat "$out"
update_section report "$out"

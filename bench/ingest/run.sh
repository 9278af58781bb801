#!/usr/bin/env bash
# The daemon's cost per sample of unwinding DWARF call graphs as it
# ingests (issue 24), against perf report --call-graph dwarf in the
# same run.
#
# Records perf record --call-graph dwarf of the DWARF test workload
# (internal/perftest.DWARFSource: -O2 -fomit-frame-pointer, its time
# through libc's qsort into a callback) for about SAMPLES samples
# (default 100000) at 20 kHz, then:
#   - go test -bench BenchmarkIngestDWARF (internal/ingest) on it: the
#     CPU time per sample of counting a sample and its arcs with its user
#     stack unwound (what the daemon with -g dwarf does), and without
#     (only the kernel part of its chain), on its first 20,000 samples;
#   - RUNS times (default 3), interleaved: jitprof import of the file
#     (reads, unwinds and counts every sample into a session) and
#     perf report --stdio --children -g none --sort dso,sym --no-inline
#     (perf unwinds every sample for --children), their CPU time (user +
#     system: on a shared machine the wall time is mostly a share of the
#     CPUs) per sample and maximum RSS;
# and writes the medians and the ratios to the ingest section of
# bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
command -v perf >/dev/null || { echo "perf is required (Debian: linux-perf)" >&2; exit 1; }
runs=${RUNS:-3}
n=${SAMPLES:-100000}
dir=$(mktemp -d)
out=$(mktemp)
trap 'rm -rf "$dir" "$out"' EXIT
# cpu CMD...: "cpu_seconds maxrss_kB" of CMD.
cpu() {
	local f
	f=$(mktemp)
	/usr/bin/time -o "$f" -f '%U %S %M' "$@" >/dev/null 2>&1 || true
	awk 'END {printf "%.2f %d\n", $1 + $2, $3}' "$f"
	rm -f "$f"
}
go build -o "$dir/jitprof" ./cmd/jitprof
go run ./bench/unwind/src >"$dir/work.c"
gcc -O2 -g -fomit-frame-pointer -o "$dir/work" "$dir/work.c"
# 20,000 samples a second of CPU time asked; a loaded machine's kernel
# throttles to less, so the workload runs twice as long as that needs.
perf record -q --call-graph dwarf -F 20000 -o "$dir/d.data" -- "$dir/work" $((n / 10)) 2>/dev/null
samples=$(perf report -i "$dir/d.data" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
mb=$(($(stat -c %s "$dir/d.data") / 1000000))

bench=$(JITPROF_BENCH_DATA="$dir/d.data" go test -run '^$' -bench BenchmarkIngestDWARF -benchtime 5x ./internal/ingest)
per() { awk -v name="$1" '$1 ~ "BenchmarkIngestDWARF/" name {for (i = 1; i < NF; i++) if ($(i+1) == "cpu-ns/sample") print $i}' <<<"$bench"; }
counts() { awk -v name="$1" '$1 ~ "BenchmarkIngestDWARF/" name {for (i = 1; i < NF; i++) if ($(i+1) == "counts/sample") print $i}' <<<"$bench"; }
unwound=$(per unwind) plain=$(per kernel-chain)

jc=() jm=() pc=() pm=()
for _ in $(seq "$runs"); do
	rm -rf "$dir/s" && mkdir -m 700 "$dir/s"
	read -r c m < <(cpu "$dir/jitprof" import --session-dir "$dir/s" "$dir/d.data")
	jc+=("$c") jm+=("$m")
	read -r c m < <(cpu perf report -i "$dir/d.data" --stdio --children -g none --sort dso,sym --no-inline)
	pc+=("$c") pm+=("$m")
done
j=$(median "${jc[@]}") p=$(median "${pc[@]}")
us() { awk -v s="$1" -v n="$samples" 'BEGIN {printf "%.1f", s * 1e6 / n}'; }
{
	echo "## The daemon's DWARF unwinding per sample (bench/ingest/run.sh)"
	echo
	echo "$(date +%F), $(nproc) CPUs, $(perf version), load average $(cut -d' ' -f1 /proc/loadavg) at the start, the script at niceness $(nice) on a machine shared with other builds and tests. perf record --call-graph dwarf (8 KiB stacks) of the DWARF test workload at 20 kHz: $samples samples, $mb MB."
	echo
	echo "Counting a sample into the sample database with its arcs (go test -bench BenchmarkIngestDWARF, the first 20,000 samples in memory, the thread's CPU time, 5 passes after one that reads the images' unwind tables): $unwound ns a sample with its user stack unwound ($(counts unwind) counts a sample: the sample and its arcs), $plain ns without (only the kernel's part of the chain, $(counts kernel-chain) counts): unwinding costs $(awk -v a="$unwound" -v b="$plain" 'BEGIN {printf "%.0f", a - b}') ns a sample."
	echo
	echo "| whole file, medians of $runs | CPU s | µs a sample | max RSS MB |"
	echo "|---|---:|---:|---:|"
	echo "| jitprof import (reads, unwinds and counts every sample) | $j | $(us "$j") | $(($(median "${jm[@]}") / 1024)) |"
	echo "| perf report --children -g none (unwinds every sample) | $p | $(us "$p") | $(($(median "${pm[@]}") / 1024)) |"
	echo
	echo "Both map the file: their RSS is mostly its pages (the import keeps a round's stacks, at most 64 MiB, and no more)."
	echo
	echo "Per sample, jitprof import costs $(awk -v a="$j" -v b="$p" 'BEGIN {printf "%.3f", a / b}') of perf report's CPU time, and the daemon's unwinding and counting alone $(awk -v a="$unwound" -v b="$p" -v n="$samples" 'BEGIN {printf "%.3f", a * n / 1e9 / b}')."
} >"$out"
update_section ingest "$out"
cat "$out"

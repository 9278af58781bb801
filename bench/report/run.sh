#!/usr/bin/env bash
# How fast jitprof report is against perf report on the same files in the
# same run (issue 12: at most 0.20 of perf's time at every size, with less
# memory; --anon-samples within 1.5x of the plain report). Records three
# system-wide -g recordings while the busy workload runs:
#   small   about 10k samples   (1 kHz a CPU for 5 s)
#   medium  about 100k samples  (10 kHz a CPU for 5 s)
#   big     about 2M samples    (50 kHz a CPU asked, for 60 s: the kernel
#                                throttles sampling to what it can take,
#                                and 19 s gave 0.63M here; bench/lib.sh)
# then times, in RUNS rounds (default 5), each command of a round timed by
# hyperfine (no shell between it and the command; a warm-up and three
# runs, their median), the rounds interleaved so that the load of other
# jobs falls on both tools alike:
#   jitprof report -l                 vs perf report --stdio --no-children -g none --sort dso,sym
#   jitprof report -l -g              vs perf report --stdio --children --sort dso,sym
#   jitprof report -l --anon-samples  vs jitprof report -l
# and writes the medians, and the worst ratio of any one run, to the report
# section of bench/RESULTS.md. A shell's $(...) and /usr/bin/time cost
# about 7 ms a command here, a fifth of a small report, which is why the
# times are hyperfine's; maximum RSS is /usr/bin/time's, from a run of its
# own. Every run after the first finds the kernel's
# symbol table in jitprof's cache (internal/symbolize/kcache.go), as every
# report after the first of a boot does; the first run of all is shown
# apart. KEEP=DIR keeps the recordings in DIR (for JITPROF_BENCH_DATA);
# DATA=DIR times the ones kept there instead of recording.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
command -v perf >/dev/null || { echo "perf is required (Debian: linux-perf)" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "hyperfine is required (Debian: hyperfine)" >&2; exit 1; }
runs=${RUNS:-5}
dir=$(mktemp -d)
trap '[ -n "$bench_busy_pid" ] && kill "$bench_busy_pid" 2>/dev/null; rm -rf "$dir"' EXIT

if [ -n "${DATA:-}" ]; then
	# Recordings an earlier run kept (KEEP): the same files for a
	# comparison of two builds.
	go build -o "$dir/jitprof" ./cmd/jitprof
	cp "$DATA"/{small,medium,big}.data "$dir/"
else
	SECONDS_TO_RECORD=${SECONDS_TO_RECORD:-60} record_big "$dir"
	"$dir/busy" 10000000 1 >/dev/null &
	bench_busy_pid=$!
	perf record -q -a -g -c 1000000 -o "$dir/small.data" -- sleep 5 2>/dev/null
	perf record -q -a -g -c 100000 -o "$dir/medium.data" -- sleep 5 2>/dev/null
	kill "$bench_busy_pid"
	wait "$bench_busy_pid" 2>/dev/null || true
	bench_busy_pid=
	[ -n "${KEEP:-}" ] && cp "$dir"/{small,medium,big}.data "$KEEP/"
fi

# A cold cache for the first run: the cost of the first report of a boot.
export JITPROF_CACHE_DIR=$dir/cache
first=$(measure "$dir/jitprof" report -i "$dir/small.data" -l)

# round DATA: prints the median seconds of each of the five commands on
# DATA, in order, one line each.
round() {
	local csv=$dir/round.csv
	hyperfine -N -w 1 -r 3 --export-csv "$csv" \
		-n jf "$dir/jitprof report -i $1 -l" \
		-n pf "perf report -i $1 --stdio --no-children -g none --sort dso,sym" \
		-n jg "$dir/jitprof report -i $1 -l -g" \
		-n pg "perf report -i $1 --stdio --children --sort dso,sym" \
		-n ja "$dir/jitprof report -i $1 -l --anon-samples" >/dev/null 2>&1
	awk -F, 'NR > 1 {printf "%.4f\n", $4}' "$csv"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -1; }

out="$dir/section.md"
{
	echo "## report (bench/report/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, $(perf --version), load average $(cut -d' ' -f1 /proc/loadavg) at the start. perf record -a -g while the busy workload runs; $runs interleaved rounds, each command's time in a round the median of 3 hyperfine runs; the table has the median over the rounds, and \"worst\" the highest ratio of any one round. Wall seconds; max RSS in MB from one run under /usr/bin/time."
	echo
	echo "| file | samples | jitprof -l | perf flat | ratio (worst) | jitprof -l -g | perf --children | ratio (worst) | --anon-samples vs -l (worst) | RSS jitprof -l -g / perf --children |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$out"
for f in small medium big; do
	data=$dir/$f.data
	samples=$("$dir/jitprof" dump --stats "$data" | awk '$1 == "SAMPLE" {print $3}')
	declare -A t=() m=()
	rf=() rg=() ra=()
	for i in $(seq "$runs"); do
		{ read -r r1; read -r r2; read -r r3; read -r r4; read -r r5; } < <(round "$data")
		t[jf]+="$r1 " t[pf]+="$r2 " t[jg]+="$r3 " t[pg]+="$r4 " t[ja]+="$r5 "
		rf+=("$(ratio "$r1" "$r2")") rg+=("$(ratio "$r3" "$r4")") ra+=("$(ratio "$r5" "$r1")")
	done
	m[jg]=$(measure "$dir/jitprof" report -i "$data" -l -g)
	m[pg]=$(measure perf report -i "$data" --stdio --children --sort dso,sym)
	med() { median ${t[$1]}; }
	echo "| $f | $samples | $(med jf) | $(med pf) | $(ratio "$(med jf)" "$(med pf)") ($(maxof "${rf[@]}")) | $(med jg) | $(med pg) | $(ratio "$(med jg)" "$(med pg)") ($(maxof "${rg[@]}")) | $(ratio "$(med ja)" "$(med jf)") ($(maxof "${ra[@]}")) | $(( ${m[jg]#* } / 1024 )) / $(( ${m[pg]#* } / 1024 )) |" >>"$out"
done
{
	echo
	echo "The first report of a boot reads /proc/kallsyms and writes the cache: on the small file it took ${first% *} s (max RSS $(( ${first#* } / 1024 )) MB) where the later runs above took the median shown."
	echo
	echo "Go benchmarks on the big file (JITPROF_BENCH_DATA, go test -bench . ./internal/report ./internal/perfdatasrc):"
	echo
	echo '```'
	JITPROF_BENCH_DATA="$dir/big.data" go test -run XXX -bench . -benchtime 3x ./internal/report ./internal/perfdatasrc | grep -E '^Benchmark'
	echo '```'
} >>"$out"
cat "$out"
update_section report "$out"

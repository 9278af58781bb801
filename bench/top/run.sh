#!/usr/bin/env bash
# The cost of a live view (issue 25): jitprof top and perf top both sample
# every CPU at 1 kHz (cpu-clock) for the same minute, each refreshing
# every 2 s as a plain report (--stdio, to /dev/null), while a CPU-bound
# native workload (bench/record/work.c) and the bundled JIT
# (examples/minijit, re-generating code at its addresses) run in loops
# beside whatever else the machine runs. Each one's CPU time (user and
# system, all threads) is read from /proc over the same 60 s. Writes the
# top section of bench/RESULTS.md. Needs root (sampling every CPU).
# Usage: bench/top/run.sh [SECONDS] (default 60).
set -euo pipefail
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
command -v perf >/dev/null || { echo "perf is required (Debian: linux-perf)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
gcc -O1 -fno-omit-frame-pointer -o "$tmp/work" "$root/bench/record/work.c"
(cd "$root" && go build -o "$tmp/" ./cmd/jitprof ./cmd/jitprof-top ./examples/minijit)
(while :; do "$tmp/work" 3000 >/dev/null; done) &
pids+=($!)
(while :; do JITPROF_JITLOG_DIR="$tmp/jitlog" "$tmp/minijit" -duration 5s -quiet; done) &
pids+=($!)

tick=$(getconf CLK_TCK)
# cpu PID: user+system seconds of a process so far, its threads' included.
cpu() { awk -v t="$tick" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }

JITPROF_JITLOG_DIR="$tmp/jitlog" "$tmp/jitprof" top --stdio -a -e cpu-clock -F 1000 -d 2 >/dev/null 2>"$tmp/jitprof.err" &
jp=$!
pids+=("$jp")
perf top --stdio -a -e cpu-clock -F 1000 -d 2 >/dev/null 2>"$tmp/perf.err" &
pp=$!
pids+=("$pp")
# Both past their start (kallsyms, /proc), then the same minute.
sleep 5
j0=$(cpu "$jp") p0=$(cpu "$pp")
load0=$(cut -d' ' -f1 /proc/loadavg)
sleep "$secs"
j1=$(cpu "$jp") p1=$(cpu "$pp")
jcpu=$(echo "$j1 - $j0" | bc) pcpu=$(echo "$p1 - $p0" | bc)
jrss=$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$jp/status")
prss=$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$pp/status")

out="$tmp/section.md"
{
	echo "## top (bench/top/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, $(perf version), load average $load0 at the start. Both sample every CPU at 1 kHz (cpu-clock) at once, refreshing every 2 s as a plain report to /dev/null, while bench/record/work.c and examples/minijit (generating code in a loop) run beside the machine's other work; CPU time over the same $secs s, after 5 s for both to start."
	echo
	echo "| viewer | CPU seconds in $secs s | of one CPU | peak RSS MB |"
	echo "|---|---|---|---|"
	echo "| perf top --stdio -a -F 1000 | $pcpu | $(echo "scale=2; 100 * $pcpu / $secs" | bc)% | $prss |"
	echo "| jitprof top --stdio -a -F 1000 | $jcpu | $(echo "scale=2; 100 * $jcpu / $secs" | bc)% | $jrss |"
	echo
	echo "jitprof's includes naming minijit's JIT code: its jitlog read again every 500 ms while it runs (internal/top)."
} >"$out"
cat "$out"
update_section top "$out"

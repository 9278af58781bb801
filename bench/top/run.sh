#!/usr/bin/env bash
# The cost of a live view (issue 25): jitprof top and perf top both sample
# every CPU at 1 kHz (cpu-clock) for the same minute, each refreshing
# every 2 s as a plain report (--stdio, to /dev/null), while a CPU-bound
# native workload (bench/record/work.c) and the bundled JIT
# (examples/minijit, re-generating code at its addresses) run in loops
# beside whatever else the machine runs. Each one's CPU time (user and
# system, all threads) is read from /proc over the same 60 s, and each
# one's resident memory every 30 s, and jitprof's live heap (what its
# garbage collector found in use, GODEBUG=gctrace=1; its resident memory
# is up to five times that, at jitprof's GOGC of 400): minijit, run
# again every 5 s, is a new process with new code each time, so a viewer
# that keeps what it counted for ever grows. With BASE=REV (a git
# revision) a jitprof top built from REV runs beside them too, for its
# memory. Writes the top
# section of bench/RESULTS.md. Needs root (sampling every CPU).
# Usage: [BASE=REV] bench/top/run.sh [SECONDS] (default 60).
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
if [ -n "${BASE:-}" ]; then
	mkdir "$tmp/base" "$tmp/base-src"
	git -C "$root" archive "$BASE" | tar -x -C "$tmp/base-src"
	(cd "$tmp/base-src" && go build -o "$tmp/base/" ./cmd/jitprof ./cmd/jitprof-top)
	base=$(git -C "$root" rev-parse --short "$BASE")
fi
(while :; do "$tmp/work" 3000 >/dev/null; done) &
pids+=($!)
(while :; do JITPROF_JITLOG_DIR="$tmp/jitlog" "$tmp/minijit" -duration 5s -quiet; done) &
pids+=($!)

tick=$(getconf CLK_TCK)
# cpu PID: user+system seconds of a process so far, its threads' included.
cpu() { awk -v t="$tick" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }

GODEBUG=gctrace=1 JITPROF_JITLOG_DIR="$tmp/jitlog" "$tmp/jitprof" top --stdio -a -e cpu-clock -F 1000 -d 2 >/dev/null 2>"$tmp/jitprof.err" &
jp=$!
pids+=("$jp")
perf top --stdio -a -e cpu-clock -F 1000 -d 2 >/dev/null 2>"$tmp/perf.err" &
pp=$!
pids+=("$pp")
if [ -n "${BASE:-}" ]; then
	GODEBUG=gctrace=1 JITPROF_JITLOG_DIR="$tmp/jitlog" "$tmp/base/jitprof" top --stdio -a -e cpu-clock -F 1000 -d 2 >/dev/null 2>"$tmp/base.err" &
	bp=$!
	pids+=("$bp")
fi
# rss PID: resident MB now; hwm PID: at most so far.
rss() { awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$1/status"; }
hwm() { awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$1/status"; }
# live FILE: the most live heap (MB) the GC traces in FILE found since
# the last call for FILE (FILE.seen counts the traces read: a function
# called in $(...) keeps no variable).
live() {
	local from
	from=$(cat "$1.seen" 2>/dev/null || echo 0)
	grep -c '^gc ' "$1" >"$1.seen" || true
	grep '^gc ' "$1" | tail -n +"$((from + 1))" | awk '{split($11, a, "->"); if (a[3] + 0 > m) m = a[3] + 0} END {print m + 0}'
}
# All past their start (kallsyms, /proc), then the same span.
sleep 5
j0=$(cpu "$jp") p0=$(cpu "$pp")
load0=$(cut -d' ' -f1 /proc/loadavg)
jseries="" pseries="" bseries="" jlive="" blive=""
live "$tmp/jitprof.err" >/dev/null
[ -z "${BASE:-}" ] || live "$tmp/base.err" >/dev/null
for ((t = 30; t <= secs; t += 30)); do
	sleep 30
	jseries+=" $(rss "$jp")" pseries+=" $(rss "$pp")" jlive+=" $(live "$tmp/jitprof.err")"
	[ -z "${BASE:-}" ] || { bseries+=" $(rss "$bp")"; blive+=" $(live "$tmp/base.err")"; }
done
sleep $((secs % 30))
j1=$(cpu "$jp") p1=$(cpu "$pp")
jcpu=$(echo "$j1 - $j0" | bc) pcpu=$(echo "$p1 - $p0" | bc)
jrss=$(hwm "$jp") prss=$(hwm "$pp")
[ -z "${BASE:-}" ] || brss=$(hwm "$bp")

out="$tmp/section.md"
{
	echo "## top (bench/top/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, $(perf version), load average $load0 at the start$([ "$(nice)" -eq 0 ] || echo ", every process niced to $(nice) on a machine shared with other tests"). Both sample every CPU at 1 kHz (cpu-clock) at once, refreshing every 2 s as a plain report to /dev/null, while bench/record/work.c and examples/minijit (generating code in a loop) run beside the machine's other work; CPU time over the same $secs s, after 5 s for both to start."
	echo
	echo "| viewer | CPU seconds in $secs s | of one CPU | peak RSS MB | RSS MB every 30 s | live heap MB, most in each 30 s |"
	echo "|---|---|---|---|---|---|"
	echo "| perf top --stdio -a -F 1000 | $pcpu | $(echo "scale=2; 100 * $pcpu / $secs" | bc)% | $prss |$pseries | |"
	echo "| jitprof top --stdio -a -F 1000 | $jcpu | $(echo "scale=2; 100 * $jcpu / $secs" | bc)% | $jrss |$jseries |$jlive |"
	[ -z "${BASE:-}" ] || echo "| jitprof top of $base (memory only) | | | $brss |$bseries |$blive |"
	echo
	echo "jitprof's includes naming minijit's JIT code: its jitlog read again every 500 ms while it runs (internal/top). Minijit runs again every 5 s: a new process, new code."
} >"$out"
cat "$out"
update_section top "$out"

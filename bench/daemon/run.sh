#!/usr/bin/env bash
# The daemon's cost and its session's size (issue 13): jitprof's daemon
# and perf record -a sample every CPU at 1 kHz for the same minute, each
# one's CPU time measured; then the daemon runs on, and its session's size
# is taken every minute, to show that it stops growing once the code paths
# are known. A CPU-bound workload (bench/record/work.c) runs throughout,
# beside whatever else the machine runs. Writes the daemon section of
# bench/RESULTS.md. Needs root (sampling every CPU).
# Usage: bench/daemon/run.sh [MINUTES] (default 10; the first is the one
# compared with perf).
set -euo pipefail
minutes=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
tmp=$(mktemp -d)
work_pid=
cleanup() {
	[ -n "$work_pid" ] && kill "$work_pid" 2>/dev/null
	"$tmp/jitprof" daemon stop --session-dir "$tmp/s" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
gcc -O1 -fno-omit-frame-pointer -o "$tmp/work" "$root/bench/record/work.c"
(cd "$root" && go build -o "$tmp/jitprof" ./cmd/jitprof)
(while :; do "$tmp/work" 3000 >/dev/null; done) &
work_pid=$!

# cpu PID: user+system seconds of a process so far.
tick=$(getconf CLK_TCK)
cpu() { awk -v t="$tick" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }
cur="$tmp/s/samples/current"
# size: bytes of the sample files; jit: of the JIT data copies; work: of
# the workload's own sample files (its binary is under $tmp).
size() { find "$cur" -type f ! -name 'session.json' ! -path "$cur/jit/*" -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
jit() { du -sb "$cur/jit" 2>/dev/null | cut -f1 || echo 0; }
work() { find "$cur/{root}$tmp" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
files() { find "$cur" -type f ! -name 'session.json' ! -path "$cur/jit/*" | wc -l; }
samples() { "$tmp/jitprof" daemon status --session-dir "$tmp/s" | awk '/^samples:/ {print $2}'; }

"$tmp/jitprof" daemon start -a -F 1000 --session-dir "$tmp/s" 2>/dev/null
dpid=$(cat "$tmp/s/jitprofd.pid")
d0=$(cpu "$dpid")
/usr/bin/time -o "$tmp/perf.time" -f '%U %S' perf record -q -a -F 1000 -o "$tmp/p.data" -- sleep 60 2>/dev/null
d1=$(cpu "$dpid")
perf_cpu=$(awk '{printf "%.2f", $1 + $2}' "$tmp/perf.time")
daemon_cpu=$(echo "$d1 - $d0" | bc)
perf_size=$(stat -c %s "$tmp/p.data")
"$tmp/jitprof" daemon dump --session-dir "$tmp/s"
declare -a rows
rows+=("| 1 | $(samples) | $(files) | $(size) | $(work) | $(jit) |")
for ((m = 2; m <= minutes; m++)); do
	sleep 60
	"$tmp/jitprof" daemon dump --session-dir "$tmp/s"
	rows+=("| $m | $(samples) | $(files) | $(size) | $(work) | $(jit) |")
done
total_cpu=$(cpu "$dpid")

{
	echo "## the daemon (bench/daemon/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, $(perf version). Every CPU sampled at 1 kHz (cpu-clock) while bench/record/work.c runs in a loop, beside the other work of a shared machine."
	echo
	echo "CPU time over the same 60 s, both sampling at once:"
	echo
	echo "| sampler | CPU seconds in 60 s | of one CPU | output |"
	echo "|---|---|---|---|"
	echo "| perf record -a -F 1000 | $perf_cpu | $(echo "scale=2; 100 * $perf_cpu / 60" | bc)% | perf.data $perf_size bytes |"
	echo "| jitprof daemon -a -F 1000 | $daemon_cpu | $(echo "scale=2; 100 * $daemon_cpu / 60" | bc)% | session below |"
	echo
	echo "The daemon's session, minute by minute, after a dump ($total_cpu CPU seconds in all over $minutes minutes): the sample files of every process, those of the workload (bench/record/work.c, its libraries counted under their own images), and the copies of JIT data of the machine's JIT processes:"
	echo
	echo "| minutes | samples counted | sample files | their bytes | the workload's bytes | JIT data bytes |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "A perf.data grows with every sample; a session only with new places (images, offsets, processes of JIT code): the workload's files grow only when an instruction is sampled for the first time (a table doubles, so in steps), and what the whole session gains later is the machine's other work (other users' new binaries and processes, each test run's temporary ones, new JIT processes' data)."

	echo
	echo "Ingest path (\`go test -bench Ingest ./internal/ingest\`: a decoded sample to a count, a quarter of them in JIT code with the sequence-number lookup; issue 13 asks at least 5 million samples a second on one core):"
	echo
	echo '```'
	(cd "$root" && go test -run XXX -bench Ingest ./internal/ingest | grep Benchmark)
	echo '```'
} | tee "$tmp/section.md"
update_section daemon "$tmp/section.md"

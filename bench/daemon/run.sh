#!/usr/bin/env bash
# The daemon's cost and its session's size (issue 13): jitprof's daemon
# and perf record -a sample every CPU at 1 kHz for the same minute, each
# one's CPU time measured; then the daemon runs on, and its session's size
# is taken every minute, to show that it stops growing once the code paths
# are known. A CPU-bound workload (bench/record/work.c) runs throughout,
# beside whatever else the machine runs. Then a second minute compared
# with perf in the same way while JIT processes start every few seconds
# beside them (examples/minijit every 3 s, each for 2 s), whose JIT data
# the daemon follows. Writes the
# daemon section of bench/RESULTS.md. Needs root (sampling every CPU).
# Run it niced (nice -n 19) on a shared machine: both samplers are
# children of the script, so the comparison stays fair.
# Usage: bench/daemon/run.sh [MINUTES] (default 10; the first is the one
# compared with perf, the JIT minute comes after the last).
set -euo pipefail
minutes=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
tmp=$(mktemp -d)
work_pid=
jit_pid=
cleanup() {
	[ -n "$work_pid" ] && kill "$work_pid" 2>/dev/null
	[ -n "$jit_pid" ] && kill "$jit_pid" 2>/dev/null
	"$tmp/jitprof" daemon stop --session-dir "$tmp/s" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
gcc -O1 -fno-omit-frame-pointer -o "$tmp/work" "$root/bench/record/work.c"
(cd "$root" && go build -o "$tmp/" ./cmd/jitprof ./examples/minijit)
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
jitprocs() { "$tmp/jitprof" daemon status --session-dir "$tmp/s" | awk '/^JIT processes:/ {print $3}'; }

# The daemon finds minijit's jitlogs where minijit writes them.
mkdir -p "$tmp/jl"
JITPROF_JITLOG_DIR=$tmp/jl "$tmp/jitprof" daemon start -a -F 1000 --session-dir "$tmp/s" 2>/dev/null
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

# The JIT minute: a minijit starts every 3 s (JIT work, a jitlog each
# run, for 2 s of wall time: on a loaded machine, niced, its second of
# CPU time can take minutes), perf record -a and the daemon sampling at
# once.
: >"$tmp/jit.runs"
(while :; do echo >>"$tmp/jit.runs"; JITPROF_JITLOG_DIR=$tmp/jl timeout 2 "$tmp/minijit" -duration 1s -quiet || true; sleep 1; done) &
jit_pid=$!
sleep 5 # the first one started
j0=$(cpu "$dpid")
jp0=$(jitprocs)
r0=$(wc -l <"$tmp/jit.runs")
/usr/bin/time -o "$tmp/perfjit.time" -f '%U %S' perf record -q -a -F 1000 -o "$tmp/pj.data" -- sleep 60 2>/dev/null
j1=$(cpu "$dpid")
jp1=$(jitprocs)
kill "$jit_pid"
jit_pid=
jit_runs=$(($(wc -l <"$tmp/jit.runs") - r0))
perfjit_cpu=$(awk '{printf "%.2f", $1 + $2}' "$tmp/perfjit.time")
daemonjit_cpu=$(echo "$j1 - $j0" | bc)

{
	echo "## the daemon (bench/daemon/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, $(perf version), load average $(cut -d' ' -f1 /proc/loadavg) at the end, the script at niceness $(nice). Every CPU sampled at 1 kHz (cpu-clock) while bench/record/work.c runs in a loop, beside the other work of a shared machine (other sessions' builds and test runs): compare the rows of one run, not runs."
	echo
	echo "CPU time over the same 60 s, both sampling at once:"
	echo
	echo "| sampler | CPU seconds in 60 s | of one CPU | output |"
	echo "|---|---|---|---|"
	echo "| perf record -a -F 1000 | $perf_cpu | $(echo "scale=2; 100 * $perf_cpu / 60" | bc)% | perf.data $perf_size bytes |"
	echo "| jitprof daemon -a -F 1000 | $daemon_cpu | $(echo "scale=2; 100 * $daemon_cpu / 60" | bc)% | session below |"
	echo
	echo "With JIT processes starting beside them: an examples/minijit every 3 s (2 s of JIT work each, at most), $jit_runs started in the minute, the daemon following the JIT data of $jp0 running processes at its start and $jp1 at its end (status's JIT processes: the machine's too). CPU time over the same 60 s, after the minutes of the table below:"
	echo
	echo "| sampler | CPU seconds in 60 s | of one CPU | ratio to perf |"
	echo "|---|---|---|---|"
	echo "| perf record -a -F 1000 | $perfjit_cpu | $(echo "scale=2; 100 * $perfjit_cpu / 60" | bc)% | 1 |"
	echo "| jitprof daemon -a -F 1000 | $daemonjit_cpu | $(echo "scale=2; 100 * $daemonjit_cpu / 60" | bc)% | $(echo "scale=2; $daemonjit_cpu / $perfjit_cpu" | bc) |"
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

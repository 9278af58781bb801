#!/usr/bin/env bash
# Reading a 1 GB PYPYLOG (LOG_MB, default 1024) against reading the same
# file without parsing it, in one run:
#   cat FILE >/dev/null                  the file from the page cache
#   dd if=FILE iflag=direct bs=4M        the file from the disk, no cache
#   pypylog.Reader (every event) and pypylog.Read (the loops, bridges and
#   traces kept), BenchmarkFile run once each, the file in the page cache,
#   with their wall and CPU time and memory
# and writes the medians of three runs to the pypylog section of
# bench/RESULTS.md. Target (issue 14): the reader at disk speed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log="$dir/big.log"
go run ./bench/pypylog/genlog -mb "${LOG_MB:-1024}" -o "$log"
bytes=$(stat -c %s "$log")
mb=$(awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 1048576 }')
lines=$(wc -l <"$log")

cat "$log" >/dev/null # into the page cache
cats=() dds=()
for i in 1 2 3; do
	cats+=("$(measure cat "$log" | cut -d' ' -f1)")
	dds+=("$(measure dd if="$log" of=/dev/null bs=4M iflag=direct | cut -d' ' -f1)")
done
go test -c -o "$dir/pypylog.test" ./internal/pypylog
# timed NAME: one run of BenchmarkFile/NAME on the log: "wall cpu maxrss_kB"
# (cpu is user+sys: on a loaded machine the wall time says more about the
# other users than about the reader).
timed() {
	local f
	f=$(mktemp)
	(cd internal/pypylog && JITPROF_BENCH_PYPYLOG="$log" /usr/bin/time -o "$f" -f '%e %U %S %M' "$dir/pypylog.test" -test.run XXX -test.bench "File/$1\$" -test.benchtime 1x >/dev/null)
	awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$f"
	rm -f "$f"
}
walls_reader=() cpus_reader=() rss_reader=() walls_read=() cpus_read=() rss_read=()
for i in 1 2 3; do
	read -r w c m < <(timed reader)
	walls_reader+=("$w") cpus_reader+=("$c") rss_reader+=("$m")
	read -r w c m < <(timed read)
	walls_read+=("$w") cpus_read+=("$c") rss_read+=("$m")
done

# rate SECONDS: the file's MB/s read in SECONDS.
rate() { awk -v b="$bytes" -v s="$1" 'BEGIN { printf "%.0f", b / 1e6 / s }'; }
# ratio A B: A / B to two places.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
cat_s=$(median "${cats[@]}") dd_s=$(median "${dds[@]}")
reader_s=$(median "${walls_reader[@]}") reader_cpu=$(median "${cpus_reader[@]}") reader_rss=$(median "${rss_reader[@]}")
read_s=$(median "${walls_read[@]}") read_cpu=$(median "${cpus_read[@]}") read_rss=$(median "${rss_read[@]}")

out="$dir/section.md"
{
	echo "## PYPYLOG reading (bench/pypylog/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, $(go version | awk '{print $3}'), load average $(cut -d' ' -f1 /proc/loadavg) at the end. Log: $mb MiB, $lines lines (bench/pypylog/genlog: a real pypy3 7.3.11 log of loops, bridges and their traces, repeated with new loops and addresses, and gc-minor sections). Medians of three runs; the file on $(df --output=fstype "$dir" | tail -1)."
	echo
	echo "| what | wall seconds | MB/s | CPU seconds | MB per CPU second | wall vs cat | max RSS MiB |"
	echo "|---|---|---|---|---|---|---|"
	echo "| cat FILE >/dev/null (page cache) | $cat_s | $(rate "$cat_s") | | | 1.00 | |"
	echo "| dd iflag=direct bs=4M (the disk) | $dd_s | $(rate "$dd_s") | | | $(ratio "$dd_s" "$cat_s") | |"
	echo "| pypylog.Reader, every event | $reader_s | $(rate "$reader_s") | $reader_cpu | $(rate "$reader_cpu") | $(ratio "$reader_s" "$cat_s") | $(mib "$reader_rss") |"
	echo "| pypylog.Read, loops, bridges and traces kept | $read_s | $(rate "$read_s") | $read_cpu | $(rate "$read_cpu") | $(ratio "$read_s" "$cat_s") | $(mib "$read_rss") |"
	echo
	echo "Target (issue 14): the reader at the disk's speed; compare its wall time with dd's, and its MB per CPU second (what it costs when the machine is free) with the disk's MB/s. Read keeps every operation of every trace (offset, guard, merge point: 16 bytes each) and a map of every guard, for the handler's line tables and bridges; its cost is that memory."
	echo
	echo "In memory (go test -bench 'Reader|Read' ./internal/pypylog, a 32 MB log):"
	echo
	echo '```'
	(cd internal/pypylog && "$dir/pypylog.test" -test.run XXX -test.bench 'Reader$|Read/' -test.benchmem) | grep '^Benchmark'
	echo '```'
} >"$out"
update_section pypylog "$out"
cat "$out"

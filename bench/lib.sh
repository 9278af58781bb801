# Shared helpers for the bench/ scripts. Source it; do not run it.

# median prints the median of its numeric arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# measure CMD...: runs CMD with stdout discarded and prints "seconds maxrss_kB",
# the seconds to the millisecond (bash's clock: /usr/bin/time's %e has
# 10 ms steps, a fifth of a small report).
measure() {
	local f t0 t1
	f=$(mktemp)
	t0=$EPOCHREALTIME
	/usr/bin/time -o "$f" -f '%M' "$@" >/dev/null 2>&1 || true
	t1=$EPOCHREALTIME
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') $(tail -1 "$f")"
	rm -f "$f"
}

# update_section NAME FILE: replaces the text between
# <!-- NAME:begin --> and <!-- NAME:end --> in bench/RESULTS.md with FILE's
# contents, appending the section if it is not there yet.
update_section() {
	local name=$1 file=$2 results
	results="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/RESULTS.md"
	[ -f "$results" ] || printf '# Benchmark results\n\nEach section is written by the script it names, from one run on one machine; compare the ratios, not the absolute times.\n' >"$results"
	if grep -q "<!-- $name:begin -->" "$results"; then
		awk -v name="$name" -v file="$file" '
			$0 == "<!-- " name ":begin -->" { print; while ((getline line < file) > 0) print line; skip = 1; next }
			$0 == "<!-- " name ":end -->" { skip = 0 }
			!skip { print }' "$results" >"$results.tmp" && mv "$results.tmp" "$results"
	else
		{ printf '\n<!-- %s:begin -->\n' "$name"; cat "$file"; printf '<!-- %s:end -->\n' "$name"; } >>"$results"
	fi
}

# record_big DIR: builds jitprof and the busy workload into DIR and records
# DIR/big.data, about 1.9 million samples with -g callchains, system-wide,
# while the workload runs (SECONDS_TO_RECORD, default 19). A script that
# calls it kills $bench_busy_pid in its exit trap, in case it is stopped
# while recording.
bench_busy_pid=
record_big() {
	local dir=$1
	go build -o "$dir/jitprof" ./cmd/jitprof
	go run ./bench/perfdata/busysrc >"$dir/busy.c"
	gcc -O1 -fno-omit-frame-pointer -pthread -o "$dir/busy" "$dir/busy.c"
	"$dir/busy" 10000000 1 >/dev/null &
	bench_busy_pid=$!
	# 50k samples/s on each of 2 CPUs (perf_event_max_sample_rate is 100000).
	perf record -q -a -g -c 20000 -o "$dir/big.data" -- sleep "${SECONDS_TO_RECORD:-19}" 2>/dev/null
	kill "$bench_busy_pid"
	wait "$bench_busy_pid" 2>/dev/null || true
	bench_busy_pid=
}

# big_recording: what the perfdata and report benchmarks start with. It
# makes $dir (removed, with the workload killed, when the script exits),
# records $dir/big.data there with record_big, and sets $samples and
# $size_mb to the recording's samples and megabytes.
big_recording() {
	command -v perf >/dev/null || { echo "perf is required (Debian: linux-perf)" >&2; exit 1; }
	dir=$(mktemp -d)
	trap '[ -n "$bench_busy_pid" ] && kill "$bench_busy_pid" 2>/dev/null; rm -rf "$dir"' EXIT
	record_big "$dir"
	samples=$("$dir/jitprof" dump --stats "$dir/big.data" | awk '$1 == "SAMPLE" {print $3}')
	size_mb=$(( $(stat -c %s "$dir/big.data") / 1000000 ))
}

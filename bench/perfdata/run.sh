#!/usr/bin/env bash
# How fast jitprof reads a big perf.data with callchains, against Linux perf
# on the same file in the same run. Records ~1.8 million samples system-wide
# with -g (about 20 s), then times, three times each:
#   jitprof dump --stats   (decodes every record, callchains included)
#   perf report --stats    (perf's cheapest full pass)
#   perf report --stdio    (what people run)
# and writes the medians to bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
big_recording

declare -A t m
for name in jitprof_stats perf_stats perf_report; do
	times=() mems=()
	for i in 1 2 3; do
		case $name in
		jitprof_stats) r=$(measure "$dir/jitprof" dump --stats "$dir/big.data") ;;
		perf_stats) r=$(measure perf report -i "$dir/big.data" --stats) ;;
		perf_report) r=$(measure perf report -i "$dir/big.data" --stdio --no-children) ;;
		esac
		times+=("${r% *}") mems+=("${r#* }")
	done
	t[$name]=$(median "${times[@]}")
	m[$name]=$(median "${mems[@]}")
done

out="$dir/section.md"
{
	echo "## perf.data reading (bench/perfdata/run.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, $(perf --version). File: $samples samples, ${size_mb} MB, system-wide with -g callchains."
	echo
	echo "| what | median seconds (3 runs) | max RSS MB | vs perf report --stdio |"
	echo "|---|---|---|---|"
	for name in jitprof_stats perf_stats perf_report; do
		label=${name/jitprof_stats/jitprof dump --stats}
		label=${label/perf_stats/perf report --stats}
		label=${label/perf_report/perf report --stdio --no-children}
		ratio=$(awk -v a="${t[$name]}" -v b="${t[perf_report]}" 'BEGIN {printf "%.3f", (b > 0) ? a / b : 0}')
		echo "| $label | ${t[$name]} | $(( ${m[$name]} / 1024 )) | $ratio |"
	done
	echo
	echo "jitprof dump --stats decodes every record including callchains; perf report --stats counts records and skips sample processing."
	echo
	echo "Go benchmark (go test -bench . ./perfdata, synthetic 100k samples with 12-entry callchains):"
	echo
	echo '```'
	go test -run XXX -bench . -benchtime 20x ./perfdata | grep -E '^Benchmark'
	echo '```'
} >"$out"
cat "$out"
update_section perfdata "$out"

# Shared helpers for the bench/ scripts. Source it; do not run it.

# median prints the median of its numeric arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# measure CMD...: runs CMD with stdout discarded and prints "seconds maxrss_kB".
measure() {
	local f
	f=$(mktemp)
	/usr/bin/time -o "$f" -f '%e %M' "$@" >/dev/null 2>&1 || true
	tail -1 "$f"
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

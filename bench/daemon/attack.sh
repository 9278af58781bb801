#!/usr/bin/env bash
# The daemon under attack (issue 26, items 1 to 4): root's daemon samples
# every CPU while an unprivileged user (jitprof-user, made if missing)
# attacks it through JIT data (bench/daemon/attack.c): a jitdump gaining
# 150,000 loads at one address every 2 s up to 2 million, a 130 MB
# jitdump growing a record every 200 ms, four perf maps 256 MiB sparse,
# two perf maps written anew with new names every 100 ms, and a process
# every 50 ms running anonymous code; and plants links in a session
# directory of theirs, which root's daemon is asked to use every minute.
# Every half second the daemon is asked its status, and the answer timed;
# every minute its memory, its session and the refusals are taken. At
# the end the session is checked against its bounds. Writes the
# daemon-attack section of bench/RESULTS.md.
#
# It is a benchmark script rather than a test: it runs for minutes, and
# what it shows (answer times, memory) are measurements of one machine.
# Needs root, gcc and setpriv.
# Usage: bench/daemon/attack.sh [MINUTES] (default 10)
set -euo pipefail
minutes=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
user=jitprof-user
[ "$(id -u)" = 0 ] || { echo "attack.sh: needs root" >&2; exit 1; }
id "$user" >/dev/null 2>&1 || /usr/sbin/useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
uid=$(id -u "$user") gid=$(id -g "$user")

tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill -- "-$p" 2>/dev/null || true
		rm -f "/tmp/jit-$p.dump" "/tmp/perf-$p.map" "/tmp/perf-$p.map.tmp"
	done
	"$tmp/jitprof" daemon stop --session-dir "$tmp/s" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$root" && go build -o "$tmp/jitprof" ./cmd/jitprof)
gcc -O1 -o "$tmp/attack" "$here/attack.c"
jp="$tmp/jitprof"
as_user() { setpriv --reuid "$uid" --regid "$gid" --clear-groups -- "$@"; }
# attacker MODE [ARG]: one attack, as the user, in a process group of its
# own (so that short's children go with it), niced, each spending a tenth
# of its time in its JIT code, so the shared machine stays usable: the
# attack is the JIT data, not the CPU.
attacker() {
	setsid nice -n 10 setpriv --reuid "$uid" --regid "$gid" --clear-groups -- "$tmp/attack" "$@" >/dev/null 2>&1 &
	pids+=($!)
}

# The planted links: the user's directory, with daemon.log and
# jitprofd.pid links to a root file, samples/current to a root directory.
secret="$tmp/secret"
echo "root's file" >"$secret"
chmod 600 "$secret"
mkdir -m 700 "$tmp/rootdir"
mkdir -m 755 "$tmp/user"
chown "$user:" "$tmp/user"
plant() {
	as_user sh -c "cd '$tmp/user' && rm -rf d && mkdir -p d/samples && ln -s '$secret' d/daemon.log && ln -s '$secret' d/jitprofd.pid && ln -s '$tmp/rootdir' d/samples/current"
}
links_tried=0 links_refused=0
try_links() {
	plant
	links_tried=$((links_tried + 1))
	local ok=1
	for op in start status stop; do
		args=(daemon "$op" --session-dir "$tmp/user/d")
		[ "$op" = start ] && args+=(-a)
		if out=$("$jp" "${args[@]}" 2>&1); then ok=0; fi
		case $out in *refusing*) ;; *) ok=0 ;; esac
	done
	[ "$(cat "$secret")" = "root's file" ] && [ -z "$(ls -A "$tmp/rootdir")" ] || ok=0
	[ $ok = 1 ] && links_refused=$((links_refused + 1))
	return 0
}

max_jit=$((1 << 30)) max_jit_proc=$((256 << 20)) max_files=65536 max_data=$((2 << 30))
"$jp" daemon start -a -F 1000 --session-dir "$tmp/s"
dpid=$(cat "$tmp/s/jitprofd.pid")
attacker flood 2000000
attacker grow 130
for _ in 1 2 3 4; do attacker sparse 256; done
attacker rewrite
attacker rewrite
attacker short

cur="$tmp/s/samples/current"
# status_field NAME: the first word of the status line NAME, 0 if none.
status_field() { awk -v f="$1" -F': *' '$1 == f {split($2, w, " "); n = w[1]} END {print n + 0}' "$tmp/status"; }
rss() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$dpid/status"; }
files() { find "$cur" -type f ! -name 'session.json' ! -path "$cur/jit/*" ! -name '.*' | wc -l; }
data() { find "$cur" -type f ! -name 'session.json' ! -path "$cur/jit/*" ! -name '.*' -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
# jitbytes: the JIT data in the session (the copies and numbered dumps,
# not the manifests); jitmax: the most any one process has there.
jitfiles() { find "$cur/jit" -type f ! -name process.json ! -name '.*' -printf '%h %s\n' 2>/dev/null; }
jitbytes() { jitfiles | awk '{s += $2} END {print s + 0}'; }
jitmax() { jitfiles | awk '{s[$1] += $2} END {for (d in s) if (s[d] > m) m = s[d]; print m + 0}'; }

# The daemon's own answer time, without a process's start: a status
# request on its socket every 0.5 s, timed from connect to answer.
python3 - "$tmp/s/control" "$((minutes * 60))" >"$tmp/probe" <<'PY' &
import socket, sys, time
path, end = sys.argv[1], time.monotonic() + int(sys.argv[2])
while time.monotonic() < end:
    t0 = time.monotonic()
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(path)
        s.sendall(b'{"op":"status"}\n')
        buf = b""
        while not buf.endswith(b"\n"):
            b = s.recv(65536)
            if not b:
                break
            buf += b
        s.close()
        ok = buf.endswith(b"\n")
    except OSError:
        ok = False
    print("%.3f %.4f %d" % (t0, time.monotonic() - t0, ok), flush=True)
    time.sleep(0.5)
PY
probe=$!
asked=0 late=0 failed=0 worst=0 base_late=0 base_worst=0
rows=()
try_links
start=$EPOCHREALTIME
for ((m = 1; m <= minutes; m++)); do
	minute_worst=0 minute_base=0
	while awk -v s="$start" -v n="$EPOCHREALTIME" -v m="$m" 'BEGIN {exit !(n - s < 60 * m)}'; do
		t0=$EPOCHREALTIME
		if timeout 30 "$jp" daemon status --session-dir "$tmp/s" >"$tmp/status" 2>&1; then :; else failed=$((failed + 1)); fi
		t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.3f", b - a}')
		asked=$((asked + 1))
		awk -v t="$t" 'BEGIN {exit !(t > 1)}' && late=$((late + 1))
		minute_worst=$(awk -v a="$minute_worst" -v b="$t" 'BEGIN {print (b > a) ? b : a}')
		# The same process start and exit without the daemon: what the
		# loaded machine alone costs an answer.
		t0=$EPOCHREALTIME
		"$jp" version >/dev/null
		t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.3f", b - a}')
		awk -v t="$t" 'BEGIN {exit !(t > 1)}' && base_late=$((base_late + 1))
		minute_base=$(awk -v a="$minute_base" -v b="$t" 'BEGIN {print (b > a) ? b : a}')
		sleep 0.5
	done
	worst=$(awk -v a="$worst" -v b="$minute_worst" 'BEGIN {print (b > a) ? b : a}')
	base_worst=$(awk -v a="$base_worst" -v b="$minute_base" 'BEGIN {print (b > a) ? b : a}')
	try_links
	rows+=("| $m | $(status_field samples) | $minute_worst | $minute_base | $(rss) | $(files) | $(data) | $(jitbytes) | $(jitmax) | $(status_field 'JIT bounds') | $(status_field refused) |")
	echo "${rows[-1]}" >&2
done
wait "$probe" || true
read -r probes probe_late probe_failed probe_worst < <(awk '{n++; if ($3 == 0) f++; else if ($2 > 1) l++; if ($2 > w) w = $2} END {printf "%d %d %d %.3f\n", n, l, f, w}' "$tmp/probe")
probe_median=$(median $(awk '{print $2}' "$tmp/probe"))
# The slowest answer on the socket in each minute.
probe_minutes=$(awk 'NR == 1 {t0 = $1} {m = int(($1 - t0) / 60) + 1; if ($2 > w[m]) w[m] = $2; if (m > last) last = m} END {for (i = 1; i <= last; i++) printf "%s%.3f", (i > 1 ? ", " : ""), w[i]}' "$tmp/probe")
peak=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$dpid/status")
cpu=$(awk -v t="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / t}' "/proc/$dpid/stat")
"$jp" daemon status --session-dir "$tmp/s" >"$tmp/status"
jit_errors=$(grep -c '^JIT data: *pid' "$tmp/status" || true)
for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
t0=$EPOCHREALTIME
"$jp" daemon stop --session-dir "$tmp/s" >/dev/null
stop=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
final_files=$(files) final_data=$(data) final_jit=$(jitbytes) final_jitmax=$(jitmax)
within=yes
[ "$final_jit" -le "$max_jit" ] && [ "$final_jitmax" -le "$max_jit_proc" ] && [ "$final_files" -le "$max_files" ] && [ "$final_data" -le "$max_data" ] || within=no

{
	echo "## the daemon under attack (bench/daemon/attack.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg) at the end (a machine shared with other builds and tests). Root's daemon samples every CPU at 1 kHz for $minutes minutes while $user runs issue 26's JIT-data attacks (bench/daemon/attack.c, niced): a jitdump gaining 150,000 loads at one address every 2 s up to 2 million, a 130 MB jitdump growing a record every 200 ms, four perf maps of 256 MiB sparse, two perf maps written anew every 100 ms with 5,000 new names, a process every 50 ms running anonymous code (each attacker in its JIT code a tenth of the time, niced); and plants links (daemon.log and jitprofd.pid to a root file, samples/current to a root directory) in a session directory of theirs, which root's daemon start, status and stop are pointed at once a minute. Bounds: the defaults (--max-jit-data 1G, --max-jit-data-per-process 256M, --max-sample-files 65536, --max-sample-data 2G)."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| status requests on the socket (connect to answer) | $probes, every 0.5 s: median $probe_median s, slowest $probe_worst s, $probe_late over 1 s, $probe_failed unanswered |"
	echo "| the slowest socket answer of each minute | $probe_minutes s |"
	echo "| \`jitprof daemon status\` run | $asked times, every 0.5 s |"
	echo "| answered in more than 1 s | $late |"
	echo "| not answered | $failed |"
	echo "| slowest answer | $worst s |"
	echo "| jitprof version, run as often, for the machine's share: over 1 s, slowest | $base_late, $base_worst s |"
	echo "| daemon's peak RSS (VmHWM) | $peak MB |"
	echo "| daemon's CPU time | $cpu s in $minutes min |"
	echo "| planted-link directories refused (start, status, stop), root's file and directory untouched | $links_refused of $links_tried |"
	echo "| processes whose JIT data was refused or met a bound, at the end | $jit_errors |"
	echo "| stop took | $stop s |"
	echo "| session at the end | $final_files sample files, $final_data bytes; JIT data $final_jit bytes, the largest process's $final_jitmax: within its bounds: $within |"
	echo
	echo "The socket's answer time is the daemon's own; \`jitprof daemon status\` adds the start and exit of a process on a loaded machine, which \`jitprof version\` shows alone."
	echo
	echo "Minute by minute: the slowest status answer of the minute (and of jitprof version), the daemon's RSS at its end, the session (sample files and their bytes, JIT data and the largest process's share of it), the processes whose JIT data met a bound and the samples refused at the sample-file bounds:"
	echo
	echo "| minute | samples | slowest status s | slowest version s | RSS MB | sample files | their bytes | JIT data bytes | largest process's | at a JIT bound | refused |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee "$tmp/section.md"
update_section daemon-attack "$tmp/section.md"

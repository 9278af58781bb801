#!/usr/bin/env bash
# The main job, from a fresh machine: install what is missing, build
# jitprof, profile a workload and print what jitprof read from it.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup.sh
out=${DEMO_DIR:-$(mktemp -d)}
go build -o "$out/jitprof" ./cmd/jitprof
go run ./bench/perfdata/busysrc >"$out/busy.c"
gcc -O1 -g -fno-omit-frame-pointer -pthread -o "$out/busy" "$out/busy.c"
echo "== recording $out/busy with Linux perf into $out/perf.data"
perf record -q -e cpu-clock -g -o "$out/perf.data" -- "$out/busy" 200 1 >/dev/null
echo "== jitprof dump --stats"
"$out/jitprof" dump --stats "$out/perf.data"
echo "== jitprof dump --header-only"
"$out/jitprof" dump --header-only "$out/perf.data"

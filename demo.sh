#!/usr/bin/env bash
# The main job, from a fresh machine: install what is missing, build
# jitprof and the bundled JIT (examples/minijit), profile the JIT with
# jitprof record, and print a report that names its JIT functions — every
# generation of code it re-generated at the same addresses — beside the
# split of time minijit measured itself.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup.sh demo
out=${DEMO_DIR:-$(mktemp -d)}
export JITPROF_JITLOG_DIR="$out/jitlog"
go build -o "$out/jitprof" ./cmd/jitprof
go build -o "$out/minijit" ./examples/minijit
echo "== jitprof record -o $out/perf.data -- minijit -duration 3s"
"$out/jitprof" record -o "$out/perf.data" -- "$out/minijit" -duration 3s
echo
echo "== jitprof report --anon-samples -l"
"$out/jitprof" report -i "$out/perf.data" --anon-samples -l --percent-limit 0.5

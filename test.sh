#!/usr/bin/env bash
# The whole test suite: set-up, formatting, go vet, staticcheck, the
# test Collector, every test under the race detector, then every fuzz
# target for 10 s (scripts/fuzz-smoke.sh, docs/fuzzing.md). Tests that
# compare against Linux perf and send to the Collector run for real
# (perf is installed by scripts/setup.sh, the Collector built here); on
# CI (CI=true) a test that would skip for a missing tool fails instead.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup.sh test

# Linux perf keeps a copy of every image it records under ~/.debug; the
# tests record hundreds of throwaway binaries and JIT images, which grew
# root's cache by gigabytes. The tests' perf gets a cache of its own
# (perf 6.1 reads buildid.dir from its config; PERF_BUILDID_DIR it ignores).
scratch=$(mktemp -d /tmp/jitprof-test-perf.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
printf '[buildid]\n\tdir = %s/buildid\n' "$scratch" >"$scratch/perfconfig"
export PERF_CONFIG=$scratch/perfconfig

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
echo "== go vet"
go vet ./...
(cd test/otelcol && go vet ./...)
echo "== staticcheck"
go tool staticcheck ./...
# The OpenTelemetry Collector the OTLP tests send to (test/otelcol, a
# module of its own), built once for every test package that runs it.
echo "== test Collector"
(cd test/otelcol && go build -o "$scratch/otelcol-jitprof" .)
export JITPROF_OTELCOL=$scratch/otelcol-jitprof
echo "== go test -race"
# -timeout is the hang detector of each package, not a speed target (a
# CI run's 30 minutes are): cmd/jitprof takes about 10 minutes alone on
# 2 cores, twice that with a CPU hog beside it (fresh-check.sh --load).
# A test that leaves /tmp/perf-PID.map behind is a defect: once the pid
# comes round again, a JIT run as another user cannot write its own map
# there (a sticky /tmp), and a test that needs it fails (it did, in CI).
ls /tmp/perf-*.map 2>/dev/null | sort >"$scratch/maps-before" || true
go test -race -count=1 -timeout 45m ./...
ls /tmp/perf-*.map 2>/dev/null | sort >"$scratch/maps-after" || true
left=$(comm -13 "$scratch/maps-before" "$scratch/maps-after")
if [ -n "$left" ]; then
	echo "warning: these perf maps appeared in /tmp while the tests ran, and are still there (a test that does not remove its JIT's map, or another program's):" >&2
	echo "$left" >&2
fi
echo "== fuzz smoke"
./scripts/fuzz-smoke.sh

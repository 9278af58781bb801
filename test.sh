#!/usr/bin/env bash
# The whole test suite: set-up, formatting, go vet, staticcheck, and every
# test under the race detector. Tests that compare against Linux perf run
# for real (perf is installed by scripts/setup.sh); on CI (CI=true) a test
# that would skip for a missing tool fails instead.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup.sh test

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
echo "== go vet"
go vet ./...
echo "== staticcheck"
go tool staticcheck ./...
echo "== go test -race"
go test -race -count=1 -timeout 20m ./...

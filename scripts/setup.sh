#!/usr/bin/env bash
# Installs what jitprof's demo and tests need on a fresh Debian machine of
# this project's kind (Go and gcc are already there): Linux perf, the
# reference every real-tool test compares against, and staticcheck.
# Idempotent and quiet when everything is present.
set -euo pipefail

need_apt=()
command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1 || need_apt+=(linux-perf)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v nm >/dev/null 2>&1 || need_apt+=(binutils)
command -v xz >/dev/null 2>&1 || need_apt+=(xz-utils)
[ -x /usr/bin/time ] || need_apt+=(time)
if [ ${#need_apt[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: need root to install: ${need_apt[*]} (apt-get install -y ${need_apt[*]})" >&2
		exit 1
	fi
	echo "setup: installing ${need_apt[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

gobin=$(go env GOPATH)/bin
if ! [ -x "$gobin/staticcheck" ]; then
	echo "setup: installing staticcheck" >&2
	go install honnef.co/go/tools/cmd/staticcheck@2026.2.2
fi

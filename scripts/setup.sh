#!/usr/bin/env bash
# Installs what jitprof needs on a fresh Debian machine of this project's
# kind (Go and gcc are already there).
#
#   scripts/setup.sh demo   what ./demo.sh runs: nothing beyond Go
#   scripts/setup.sh test   what ./test.sh runs: Linux perf (the reference
#                           every real-tool test compares against) and the
#                           tools the tests drive (pypy3: a real JIT whose
#                           log the pypy handler reads; chromium: the
#                           browser jitprof web's pages are tested in;
#                           graphviz: dot, which draws its graph view)
#
# Go tools (staticcheck) are not installed here: they are pinned in go.mod
# with tool directives and run as `go tool NAME`, checked by go.sum.
# Idempotent and quiet when everything is present.
set -euo pipefail

what=${1:-test}
case $what in
demo | test) ;;
*)
	echo "usage: scripts/setup.sh [demo|test]" >&2
	exit 2
	;;
esac

if ! command -v go >/dev/null 2>&1; then
	echo "setup: Go is missing; install Go 1.26 or later (https://go.dev/dl/) and put it on PATH" >&2
	exit 1
fi
[ "$what" = demo ] && exit 0

need_apt=()
command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1 || need_apt+=(linux-perf)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)  # the CPython hint test
command -v nm >/dev/null 2>&1 || need_apt+=(binutils)
command -v xz >/dev/null 2>&1 || need_apt+=(xz-utils)
# unshare, setpriv and su: the trust tests run a JIT as another user in
# namespaces of its own; useradd makes that user.
for tool in unshare setpriv su; do
	command -v $tool >/dev/null 2>&1 || { need_apt+=(util-linux); break; }
done
[ -x /usr/sbin/useradd ] || command -v useradd >/dev/null 2>&1 || need_apt+=(passwd)
[ -x /usr/bin/time ] || need_apt+=(time)
command -v pypy3 >/dev/null 2>&1 && pypy3 --version >/dev/null 2>&1 || need_apt+=(pypy3)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
command -v dot >/dev/null 2>&1 || need_apt+=(graphviz)
# Not for ./test.sh itself: scripts/fresh-check.sh --load keeps the CPUs
# busy with it while the tests run.
command -v stress-ng >/dev/null 2>&1 || need_apt+=(stress-ng)
if [ ${#need_apt[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: need root to install: ${need_apt[*]} (apt-get install -y ${need_apt[*]})" >&2
		exit 1
	fi
	echo "setup: installing ${need_apt[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

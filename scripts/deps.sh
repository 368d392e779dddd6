#!/bin/sh
# deps.sh: install what nkid needs to build and test, and nothing that is
# already there. Debian packages with apt-get, the Python environment in
# .venv from the pinned requirements. A fast no-op when all are present.
set -eu

PKGS="build-essential pkg-config libuv1-dev libgrpc-dev protobuf-c-compiler
libprotobuf-c-dev protobuf-compiler libsqlite3-dev libcjson-dev check
libsubunit-dev libsystemd-dev libssl-dev libopenblas-dev libsleef-dev python3-venv
valgrind util-linux systemd sccache ccache libmicrohttpd-dev prometheus
libsmartcols-dev libncurses-dev tmux libhiredis-dev redis-server redis-tools
clang libclang-rt-dev curl iproute2"

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done
if [ -n "$missing" ]; then
	echo "deps: installing:$missing"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# The venv is rebuilt when the pinned requirements change.
req=client/python/requirements-dev.txt
stamp=.venv/.deps-stamp
want=$(cat client/python/requirements.txt $req | sha256sum | cut -c1-16)
if [ ! -x .venv/bin/python ] || [ "$(cat $stamp 2>/dev/null)" != "$want" ]; then
	echo "deps: building .venv from $req"
	[ -x .venv/bin/python ] || /usr/bin/python3 -m venv .venv
	.venv/bin/python -m pip install -q --upgrade pip
	(cd client/python && ../../.venv/bin/python -m pip install -q -r requirements-dev.txt)
	echo "$want" > $stamp
fi

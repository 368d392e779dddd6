#!/bin/sh
# demo.sh: start nkid on a private socket (cpu backend, the embedded
# default), show it with nkictl, run real kernels through it from Python,
# compare them with numpy, stop it.
set -eu
cd "$(dirname "$0")/.."

T=$(mktemp -d /tmp/nkid-demo.XXXXXX)
SOCK=$T/nkid.sock
export NKID_SOCKET=$SOCK
PID=
cleanup() {
	[ -z "$PID" ] || kill -TERM "$PID" 2>/dev/null || true
	[ -z "$PID" ] || wait "$PID" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

echo "== starting nkid on $SOCK"
build/bin/nkid -s "$SOCK" --state-dir "$T/state" 2>"$T/nkid.log" &
PID=$!
i=0
until build/bin/nkictl --timeout 1 ping -n 1 >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 $PID 2>/dev/null; then
		echo "nkid did not start:"; cat "$T/nkid.log"; exit 1
	fi
	sleep 0.1
done

echo; echo "== nkictl status"
build/bin/nkictl status
echo; echo "== nkictl ping -n 1000"
build/bin/nkictl ping -n 1000

echo; echo "== kernels through nkid"
.venv/bin/python scripts/demo.py

echo; echo "== nkictl status (after)"
build/bin/nkictl status

echo; echo "== stopping nkid"
kill -TERM $PID; wait $PID && echo "nkid exited 0"
PID=

# lib.sh: shared by the functional tests. Each test gets a private
# directory, socket and state dir, a real nkid, and a trap that stops it.
# Needs NKID, NKICTL, PY (scripts/check.sh sets them).
set -eu

: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${NKID:=$TOP/build/bin/nkid}" "${NKICTL:=$TOP/build/bin/nkictl}"
: "${PY:=$TOP/.venv/bin/python}"
T=$(mktemp -d /tmp/nkid-func.XXXXXX)
SOCK=$T/nkid.sock
LOG=$T/nkid.log
NKID_PID=
export NKID_SOCKET=$SOCK

fail() {
	echo "FAIL: $*" >&2
	if [ -s "$LOG" ]; then echo "--- nkid log" >&2; tail -n 30 "$LOG" >&2; fi
	exit 1
}

# start_nkid [ARG...]: start nkid on $SOCK and wait until it answers.
start_nkid() {
	"$NKID" -s "$SOCK" --state-dir "$T/state" "$@" >>"$LOG" 2>&1 &
	NKID_PID=$!
	wait_ready
}

wait_ready() {
	i=0
	while ! "$NKICTL" -s "$SOCK" --timeout 1 ping -n 1 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "nkid did not start serving on $SOCK within 10 s"
		kill -0 "$NKID_PID" 2>/dev/null || fail "nkid exited at start"
		sleep 0.1
	done
}

# stop_nkid: SIGTERM, then wait; prints nothing, returns nkid's status.
stop_nkid() {
	[ -n "$NKID_PID" ] || return 0
	kill -TERM "$NKID_PID" 2>/dev/null || true
	rc=0; wait "$NKID_PID" || rc=$?
	NKID_PID=
	return $rc
}

cleanup() {
	if [ -n "$NKID_PID" ]; then kill -KILL "$NKID_PID" 2>/dev/null || true; fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# json_get FILE EXPR: evaluate a Python expression on the JSON object d.
json_get() {
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# big_bundle PATH MIB: write a bundle (docs/cache.md) of one entry of MIB
# MiB of random bytes, of another compiler (an importing nkid keeps it and
# never serves it).
big_bundle() {
	"$PY" - "$1" "$2" <<'PYEOF'
import hashlib, os, struct, sys, time
blob = os.urandom(int(sys.argv[2]) << 20)
f = [hashlib.sha256(b"big").hexdigest(), "big", "nkir/1", "trn1", "cpu",
     "other-compiler 0", "", hashlib.sha256(blob).hexdigest(), "ok", "",
     "1.000", "%.6f" % time.time(), "0"]
meta = b"".join(struct.pack("<I", len(x.encode())) + x.encode() for x in f)
body = (b"NKIDBDL1" + struct.pack("<II", 1, 1) + struct.pack("<I", len(meta)) +
        meta + struct.pack("<Q", len(blob)) + blob)
open(sys.argv[1], "wb").write(body + b"NKIDEND1" + hashlib.sha256(body).digest())
PYEOF
}

# notify_listen PATH LOG: listen on the datagram socket PATH as systemd's
# NOTIFY_SOCKET, appending each message and a newline to LOG, for 30 s
# after the last one. Returns once PATH exists (up to 5 s); the listener's
# pid is in $LISTENER.
notify_listen() {
	"$PY" - "$1" "$2" <<'P' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(30)
with open(sys.argv[2], "w") as f:
    try:
        while True:
            f.write(s.recv(4096).decode() + "\n"); f.flush()
    except OSError:
        pass
P
	LISTENER=$!
	i=0
	while [ ! -S "$1" ] && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
}

# lib.sh: shared by the functional tests. Each test gets a private
# directory, socket and state dir, a real nkid, and a trap that stops it.
# Needs NKID, NKICTL, PY (scripts/check.sh sets them).
set -eu

: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
export TOP
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

# skip WHY: this test cannot run here (no root, a missing tool); exit 77,
# which scripts/check.sh reports as SKIP, never as a pass.
skip() {
	echo "skip: $*"
	exit 77
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

# trace_va ROWS,COLS: trace examples.vector_add for two float32 inputs of
# that shape into $T/va.nkir.
trace_va() {
	"$PY" -m nkid.trace examples.vector_add:vector_add --shape "$1" \
		--dtype float32 --shape "$1" --dtype float32 -o "$T/va.nkir" \
		>/dev/null || fail "cannot trace vector_add"
}

# trace_mm: trace examples.matmul for float32 [512, 256] and [512, 1024]
# into $T/mm.nkir.
trace_mm() {
	"$PY" -m nkid.trace examples.matmul:matmul --shape 512,256 \
		--dtype float32 --shape 512,1024 --dtype float32 \
		-o "$T/mm.nkir" >/dev/null || fail "cannot trace matmul"
}

# ones_npy PATH ROWS,COLS: write a float32 array of ones of that shape.
ones_npy() {
	"$PY" -c 'import numpy as np, sys
np.save(sys.argv[1], np.ones([int(n) for n in sys.argv[2].split(",")], np.float32))' \
		"$1" "$2" || fail "cannot write $1"
}

# start_nkid_valgrind [ARG...]: start_nkid under valgrind's memcheck
# (definite leaks are errors; the report goes to $T/vg.log).
start_nkid_valgrind() {
	command -v valgrind >/dev/null || fail "valgrind is missing"
	valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite \
		--suppressions="$TOP/tests/valgrind.supp" --log-file="$T/vg.log" \
		"$NKID" -s "$SOCK" --state-dir "$T/state" "$@" >>"$LOG" 2>&1 &
	NKID_PID=$!
	i=0
	while ! "$NKICTL" --timeout 2 ping -n 1 >/dev/null 2>&1; do
		i=$((i + 1)); [ $i -lt 300 ] || fail "nkid under valgrind did not serve"
		sleep 0.1
	done
}

# stop_nkid_valgrind: stop_nkid; fail, showing valgrind's report, unless
# nkid exited 0 and valgrind found nothing.
stop_nkid_valgrind() {
	rc=0; stop_nkid || rc=$?
	[ $rc -eq 0 ] || { cat "$T/vg.log" >&2; fail "valgrind or nkid exit $rc"; }
}

# hold_lease PATTERN: hold a core with `nkictl lock -- sleep 30` in the
# background (its pid in $LOCK) until `nkictl jobs` shows PATTERN.
hold_lease() {
	"$NKICTL" lock -- sleep 30 >/dev/null 2>&1 &
	LOCK=$!
	i=0
	until "$NKICTL" jobs | grep -q "$1"; do
		i=$((i + 1)); [ $i -lt 100 ] || fail "no lease"; sleep 0.1
	done
}

# expect_cache_hits: $T/va.nkir and $T/mm.nkir at every -O level compile
# as cache hits.
expect_cache_hits() {
	for o in "" "-O1" "-O2"; do
		for k in va mm; do
			"$NKICTL" --json compile --options "$o" "$T/$k.nkir" >"$T/c.json" ||
				fail "compile $k $o"
			[ "$(json_get "$T/c.json" "d['cache_hit']")" = True ] ||
				fail "$k $o was compiled after import"
		done
	done
}

# remote-lib.sh: shared by the remote-tier tests (tests/func/06xx-remote-*):
# a real redis-server on a private Unix socket and directory, a fleet key,
# and nkid daemons of a fleet, each on its own socket and state dir, all
# stopped by the trap. Sourced after lib.sh.

command -v redis-server >/dev/null || fail "no redis-server (make deps installs it)"
command -v redis-cli >/dev/null || fail "no redis-cli (make deps installs redis-tools)"

RSOCK=$T/redis.sock
REDIS_PID=
FLEET_PIDS=
REDIS_ARGS=

# start_redis [REDIS-ARG...]: redis-server on $RSOCK (no TCP, no
# persistence); the arguments are kept for restart_redis.
start_redis() {
	[ $# -eq 0 ] || REDIS_ARGS="$*"
	mkdir -p "$T/redis"
	# shellcheck disable=SC2086
	redis-server --port 0 --unixsocket "$RSOCK" --unixsocketperm 700 \
	    --dir "$T/redis" --save '' --appendonly no \
	    --logfile "$T/redis.log" $REDIS_ARGS &
	REDIS_PID=$!
	i=0
	while ! rcli ping 2>/dev/null | grep -q -e PONG -e NOAUTH; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "redis-server did not start: $(tail -5 "$T/redis.log")"
		sleep 0.05
	done
}

stop_redis() {
	[ -n "$REDIS_PID" ] || return 0
	kill -KILL "$REDIS_PID" 2>/dev/null || true
	wait "$REDIS_PID" 2>/dev/null || true
	REDIS_PID=
}

# rcli ARG...: redis-cli on the private socket ($RCLI_AUTH: its login).
rcli() {
	# shellcheck disable=SC2086
	redis-cli -s "$RSOCK" ${RCLI_AUTH:-} "$@"
}

# fleet_key FILE [TEXT]: a fleet key file (mode 0600).
fleet_key() {
	( umask 077; printf '%s\n' "${2:-fleet-key-of-the-tests-0123456789}" >"$1" )
}

# fleet_config FILE [EXTRA-JSON-MEMBERS]: a config with the remote tier on
# $RSOCK, read-write, the fleet key $T/fleet.key.
fleet_config() {
	[ -f "$T/fleet.key" ] || fleet_key "$T/fleet.key"
	cat >"$1" <<J
{
	"log_level": "debug",
	"remote": {
		"url": "unix://$RSOCK",
		"mode": "read-write",
		"hmac_key_file": "$T/fleet.key",
		"timeout_ms": ${REMOTE_TIMEOUT_MS:-500},
		"lock_ms": ${REMOTE_LOCK_MS:-2000}${2:+,
		$2}
	}
}
J
}

# start_host N CONFIG [ARG...]: nkid number N on $T/hN.sock, state
# $T/hN; its pid in $HOST_PID (and in FLEET_PIDS for the trap).
start_host() {
	_h=$1 _cfg=$2
	shift 2
	"$NKID" -s "$T/h$_h.sock" --state-dir "$T/h$_h" -c "$_cfg" "$@" \
	    >>"$T/h$_h.log" 2>&1 &
	HOST_PID=$!
	FLEET_PIDS="$FLEET_PIDS $HOST_PID"
	i=0
	while ! "$NKICTL" -s "$T/h$_h.sock" --timeout 1 ping -n 1 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "nkid $_h did not start: $(tail -5 "$T/h$_h.log")"
		kill -0 "$HOST_PID" 2>/dev/null || fail "nkid $_h exited at start: $(tail -5 "$T/h$_h.log")"
		sleep 0.1
	done
}

# stop_host PID N: SIGTERM; nkid N must exit 0 within 5 s, its loop empty.
stop_host() {
	kill -TERM "$1"
	_i=0
	while kill -0 "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -lt 50 ] || fail "nkid $2 did not stop on SIGTERM"
		sleep 0.1
	done
	wait "$1" || fail "nkid $2 exited non-zero"
	! grep -q "event loop not empty" "$T/h$2.log" || fail "nkid $2: event loop not empty at exit"
}

# hctl N ARG...: nkictl against host N.
hctl() {
	_h=$1
	shift
	"$NKICTL" -s "$T/h$_h.sock" "$@"
}

# hstat N EXPR: a Python expression on host N's `nkictl --json status` (d).
hstat() {
	hctl "$1" --json status >"$T/st.json" || fail "status of host $1 failed"
	json_get "$T/st.json" "$2"
}

# wait_entry KEY: the store holds KEY's entry within 5 s.
wait_entry() {
	_i=0
	while [ "$(rcli exists "nkid:neff:$1")" != 1 ]; do
		_i=$((_i + 1))
		[ $_i -lt 50 ] || fail "no entry '$1' in the store after 5 s"
		sleep 0.1
	done
}

# make_kernels DIR N: N distinct small kernels DIR/k0.nkir ... (a scale
# by a different constant each), and the manifest DIR/all.json.
make_kernels() {
	mkdir -p "$1"
	"$PY" - "$1" "$2" <<'P' || fail "cannot make kernels"
import json, os, sys
from nkid._proto import nkid_pb2
sys.path.insert(0, os.path.join(os.environ["TOP"], "tests", "func"))
from scale_ir import scaled_irs

d, n = sys.argv[1], int(sys.argv[2])
scaled = scaled_irs()
for i in range(n):
    ref = nkid_pb2.KernelRef()
    ref.kernel.name = "scale"
    ref.kernel.format = "nkir/1"
    ref.kernel.ir = scaled(i)
    open("%s/k%d.nkir" % (d, i), "wb").write(b"NKIDKRF1" + ref.SerializeToString())
json.dump({"kernels": ["k%d.nkir" % i for i in range(n)]}, open(d + "/all.json", "w"))
P
}

remote_cleanup() {
	for p in $FLEET_PIDS; do kill -KILL "$p" 2>/dev/null || true; done
	stop_redis
	cleanup
}
trap remote_cleanup EXIT

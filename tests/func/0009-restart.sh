#!/bin/sh
# Restarts lose no call: 16 Python processes call a tiny kernel in a loop
# (each result checked against numpy) while nkid restarts 5 times on its
# own socket (SIGTERM, start again) and 5 times under socket activation
# (systemd-socket-activate holds the socket, as nkid.socket does); no call
# may fail, and the longest call meanwhile is reported. Then nkictl: a
# command started while nkid is down waits for it.
. "$(dirname "$0")/lib.sh"

modes=plain,activate
command -v systemd-socket-activate >/dev/null || {
	echo "note: systemd-socket-activate (package systemd) is missing: plain restarts only"
	modes=plain
}
export PYTHONPATH="$TOP/client/python${PYTHONPATH:+:$PYTHONPATH}"
"$PY" "$TOP/tests/func/restart_drive.py" drive --nkid "$NKID" --dir "$T" \
	--clients 16 --restarts 5 --modes "$modes" --json "$T/restart.json" \
	>/dev/null || fail "restart_drive.py failed: $(tail -n 5 "$T"/client.0.log 2>/dev/null)"
LOG=$T/nkid.log
failed=$(json_get "$T/restart.json" "d['failed_calls']")
calls=$(json_get "$T/restart.json" "d['calls']")
stall=$(json_get "$T/restart.json" "d['modes']")
[ "$failed" -eq 0 ] ||
	fail "$failed of $((calls + failed)) calls failed across restarts: $(json_get "$T/restart.json" "d['errors']")"
[ "$calls" -gt 1000 ] || fail "only $calls calls made: the clients did not run"
echo "restart: $calls calls, 0 failed; longest call per mode (ms): $stall"

# The daemon's side: it answered queued and late calls as retryable, and
# never waited out the grace period for idle connections.
grep -q "grace period over" "$LOG" && fail "a restart waited out shutdown_grace_ms"

# nkictl waits for nkid: started with nkid down (its lock file left from
# the runs above), it is served once nkid comes back.
rm -f "$SOCK"
( sleep 0.5; exec "$NKID" -s "$SOCK" --state-dir "$T/state" >>"$LOG" 2>&1 ) &
NKID_PID=$!
"$NKICTL" -s "$SOCK" --timeout 20 ping -n 1 >"$T/ping.out" 2>&1 ||
	fail "nkictl did not wait for nkid: $(cat "$T/ping.out")"
# nkictl calling in a loop while nkid restarts twice: no call fails.
"$NKICTL" -s "$SOCK" ping -n 20000 >"$T/pings.out" 2>&1 &
PINGS=$!
sleep 0.3
for i in 1 2; do
	stop_nkid || fail "nkid exited non-zero on SIGTERM"
	"$NKID" -s "$SOCK" --state-dir "$T/state" >>"$LOG" 2>&1 &
	NKID_PID=$!
	sleep 0.3
done
wait $PINGS || fail "nkictl ping failed across restarts: $(tail -n 3 "$T/pings.out")"
echo "nkictl: $(tail -n 1 "$T/pings.out")"

# Without a nkid ever there (no socket, no lock), it fails at once.
t0=$(date +%s)
rc=0; "$NKICTL" -s "$T/never.sock" ping -n 1 >"$T/out" 2>&1 || rc=$?
[ $rc -eq 3 ] || fail "nkictl on a socket no nkid ever had: exit $rc"
[ $(( $(date +%s) - t0 )) -lt 3 ] || fail "nkictl waited for a socket no nkid ever had"
stop_nkid || fail "nkid exited non-zero on SIGTERM"
echo ok

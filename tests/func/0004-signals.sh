#!/bin/sh
# SIGTERM with calls in flight: nkid finishes or cancels them and exits 0
# within 2 s; READY=1 and STOPPING=1 reach NOTIFY_SOCKET.
. "$(dirname "$0")/lib.sh"

# A NOTIFY_SOCKET we listen on.
notify_listen "$T/notify.sock" "$T/notify.log"

NOTIFY_SOCKET="$T/notify.sock" start_nkid
grep -q READY=1 "$T/notify.log" || { sleep 0.5; grep -q READY=1 "$T/notify.log"; } ||
	fail "no READY=1 on NOTIFY_SOCKET"

# Calls in flight from four clients (which, nkid gone, do not wait for
# another: NKID_RECONNECT_TIMEOUT).
for i in 1 2 3 4; do
	NKID_RECONNECT_TIMEOUT=0 "$NKICTL" ping -n 100000 >/dev/null 2>&1 &
done
sleep 0.5
start=$(date +%s%N)
rc=0; stop_nkid || rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -eq 0 ] || fail "nkid exited $rc on SIGTERM"
[ $ms -lt 2000 ] || fail "SIGTERM took $ms ms"
sleep 0.2
grep -q STOPPING=1 "$T/notify.log" || fail "no STOPPING=1 on NOTIFY_SOCKET"
kill $LISTENER 2>/dev/null || true
wait 2>/dev/null || true
echo "ok (stopped in $ms ms)"

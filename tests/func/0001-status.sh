#!/bin/sh
# Status and ping through nkictl against a real nkid on a private socket.
. "$(dirname "$0")/lib.sh"

start_nkid

"$NKICTL" --json status >"$T/status.json" || fail "nkictl --json status failed"
for k in version pid uptime_s backend cores socket counters; do
	[ "$(json_get "$T/status.json" "'$k' in d")" = True ] || fail "status lacks key '$k'"
done
[ "$(json_get "$T/status.json" "d['pid']")" = "$NKID_PID" ] || fail "status pid is not nkid's"
[ "$(json_get "$T/status.json" "d['socket']")" = "$SOCK" ] || fail "status socket differs"
[ "$(json_get "$T/status.json" "d['backend']")" = cpu ] || fail "default backend is not cpu"
[ "$(json_get "$T/status.json" "len(d['cores'])")" -ge 1 ] || fail "no cores listed"

mode=$(stat -c %a "$SOCK")
[ "$mode" = 660 ] || fail "socket mode is $mode, want 660"

"$NKICTL" status | grep -q "pid" || fail "human status lacks pid"

out=$("$NKICTL" ping -n 200) || fail "ping failed"
echo "$out" | grep -q p50 || fail "ping does not print p50: $out"
echo "$out" | grep -q p99 || fail "ping does not print p99: $out"

# The counters saw the pings.
"$NKICTL" --json status >"$T/status2.json"
n=$(json_get "$T/status2.json" "d['counters']['methods']['Ping']['calls']")
[ "$n" -ge 200 ] || fail "Ping counter is $n after 200 pings"

# Exit codes: 3 cannot connect, 2 usage.
rc=0; "$NKICTL" -s "$T/nope.sock" status >"$T/out" 2>&1 || rc=$?
[ $rc -eq 3 ] || fail "unreachable socket: exit $rc, want 3"
grep -q "$T/nope.sock" "$T/out" || fail "unreachable socket not named: $(cat "$T/out")"
rc=0; "$NKICTL" no-such-command >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "unknown command: exit $rc, want 2"

stop_nkid || fail "nkid exited non-zero on SIGTERM"
echo ok

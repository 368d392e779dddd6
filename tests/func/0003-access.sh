#!/bin/sh
# The access policy: a uid outside it is refused at accept, told so
# (PERMISSION_DENIED), counted, and nkid keeps serving everyone else.
. "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
[ "$(id -u)" -eq 0 ] || skip "needs root to switch uid"

chmod 0755 "$T"
# The socket is world-connectable so that the policy, not the file mode,
# is what refuses uid 65534.
echo '{ "socket_mode": "0666" }' >"$T/open.json"
start_nkid -c "$T/open.json"

rc=0
setpriv --reuid 65534 --regid 65534 --clear-groups \
	"$NKICTL" -s "$SOCK" --timeout 3 status >"$T/out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "uid 65534 was served"
grep -q "PERMISSION_DENIED: uid 65534 is not allowed" "$T/out" ||
	fail "uid 65534 not told PERMISSION_DENIED: $(cat "$T/out")"

"$NKICTL" --json status >"$T/status.json" || fail "root refused after a refused peer"
n=$(json_get "$T/status.json" "d['counters']['refused']")
[ "$n" -ge 1 ] || fail "refused counter is $n"

stop_nkid || fail "nkid exited non-zero"
echo ok

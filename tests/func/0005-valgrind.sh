#!/bin/sh
# Start, serve, stop under valgrind: no invalid accesses, no definite leaks.
. "$(dirname "$0")/lib.sh"

command -v valgrind >/dev/null || fail "valgrind is missing"
valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	--suppressions="$TOP/tests/valgrind.supp" --log-file="$T/vg.log" \
	"$NKID" -s "$SOCK" --state-dir "$T/state" >>"$LOG" 2>&1 &
NKID_PID=$!
i=0
while ! "$NKICTL" --timeout 2 ping -n 1 >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 300 ] || fail "nkid under valgrind did not serve"
	sleep 0.1
done
"$NKICTL" --json status >/dev/null || fail "status failed"
"$NKICTL" ping -n 50 >/dev/null || fail "ping failed"
rc=0; stop_nkid || rc=$?
[ $rc -eq 0 ] || { cat "$T/vg.log" >&2; fail "valgrind or nkid exit $rc"; }
echo ok

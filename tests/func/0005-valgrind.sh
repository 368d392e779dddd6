#!/bin/sh
# Start, serve, stop under valgrind: no invalid accesses, no definite leaks.
. "$(dirname "$0")/lib.sh"

start_nkid_valgrind
"$NKICTL" --json status >/dev/null || fail "status failed"
"$NKICTL" ping -n 50 >/dev/null || fail "ping failed"
stop_nkid_valgrind
echo ok

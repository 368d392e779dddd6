#!/bin/sh
# lock and jobs (issue 31): `lock -w` giving up exits -E's code (default 1,
# as flock(1)), not CMD's (item 8); `help jobs` and the man page explain the
# columns, and a lease cancelled after it was granted is "stopped", not
# "cancelled" (which is: never started, as nkid_jobs_cancelled_total
# counts) (item 16).
. "$(dirname "$0")/lib.sh"

start_nkid
hold_lease "lease"
rc=0; "$NKICTL" lock -w 0.2 -E 75 -- true >"$T/l.out" 2>&1 || rc=$?
[ $rc -eq 75 ] || fail "lock -w that gives up with -E 75: exit $rc, $(cat "$T/l.out")"
grep -q "a core was not granted within 0.2 s" "$T/l.out" || fail "lock -w: $(cat "$T/l.out")"
rc=0; "$NKICTL" lock -w 0.2 -- true >"$T/l2.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "lock -w without -E: exit $rc"
rc=0; "$NKICTL" lock -E 300 -- true >"$T/l3.out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "lock -E 300: exit $rc"

id=$("$NKICTL" --json jobs | "$PY" -c 'import json,sys; print([j["id"] for j in json.load(sys.stdin)["jobs"] if j["kind"] == "lease"][0])')
"$NKICTL" cancel "$id" >/dev/null || fail "cancel of the lease"
wait "$LOCK" 2>/dev/null || true
"$NKICTL" --json jobs --all >"$T/j.json"
"$PY" - "$T/j.json" "$id" <<'PYEOF' || fail "the granted, cancelled lease: $(cat "$T/j.json")"
import json, sys
j = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["id"] == int(sys.argv[2])][0]
assert j["started_at"] is not None and j["state"] == "stopped", j
PYEOF
"$NKICTL" help jobs >"$T/help" || fail "help jobs"
for w in "WAIT (how long" "RUN (how long" "stopped (cancelled after it started)" "cancelled (ended before it started"; do
	grep -q "$w" "$T/help" || fail "help jobs does not explain '$w': $(cat "$T/help")"
done
grep -q "stopped (cancelled after it started)" "$TOP/build/man/nkictl.1" ||
	fail "the man page does not explain the jobs states"
stop_nkid || fail "nkid exited non-zero"
echo ok

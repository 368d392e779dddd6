#!/bin/sh
# The scheduler and the streaming transport under valgrind: leases (held,
# released, expired, dropped by kill -9, refused a core), runs, a cancel,
# jobs and status; no invalid accesses, no definite leaks, clean exit.
. "$(dirname "$0")/lib.sh"

trace_va 128,512
ones_npy "$T/x.npy" 128,512
start_nkid_valgrind
RUN="run $T/va.nkir -i x=$T/x.npy -i y=$T/x.npy -o $T/o"
"$NKICTL" lock -- true || fail "lock failed"
"$NKICTL" lock -c 3 -- true 2>/dev/null && fail "lock of core 3 succeeded"
"$NKICTL" lock -t 0.3 -- sleep 5 2>/dev/null && fail "expired lock succeeded"
"$NKICTL" lock -- sleep 30 &
lock_pid=$!
sleep 1
"$NKICTL" $RUN >/dev/null 2>&1 &
run_pid=$!
"$NKICTL" $RUN >/dev/null 2>&1 &
gone_pid=$!
sleep 1
"$NKICTL" jobs >/dev/null || fail "jobs failed"
kill -9 $gone_pid
"$NKICTL" --json jobs >"$T/j.json"
id=$(json_get "$T/j.json" "[j['id'] for j in d['jobs'] if j['kind'] == 'lease'][0]")
"$NKICTL" cancel "$id" >/dev/null || fail "cancel failed"
wait $lock_pid 2>/dev/null || true
wait $run_pid || fail "run failed"
"$NKICTL" lock -- sleep 30 &
lock_pid=$!
sleep 1
kill -9 $lock_pid
"$NKICTL" --json jobs --all >/dev/null || fail "jobs --all failed"
"$NKICTL" status >/dev/null || fail "status failed"
stop_nkid_valgrind
echo ok

#!/bin/sh
# Leases: `nkictl lock` holds a core while CMD runs and exits with CMD's
# status; a run submitted meanwhile starts only after the lease ends; a
# core that does not exist is INVALID_ARGUMENT; -w bounds the wait; a lease
# past its maximum is EXPIRED; kill -9 of the holder frees the core within
# 1 s.
. "$(dirname "$0")/lib.sh"

trace_va 128,512
ones_npy "$T/x.npy" 128,512
start_nkid

# core_state N: the state of core N now.
core_state() {
	"$NKICTL" --json status >"$T/st.json" && json_get "$T/st.json" "d['cores'][$1]['state']"
}

# CMD runs with the core and NEURON_RT_VISIBLE_CORES; its status is ours.
rc=0
"$NKICTL" lock -- sh -c 'echo "cores=$NEURON_RT_VISIBLE_CORES"; exit 7' >"$T/out" 2>&1 || rc=$?
[ $rc -eq 7 ] || fail "lock did not exit with CMD's status: $rc ($(cat "$T/out"))"
grep -q "cores=0" "$T/out" || fail "NEURON_RT_VISIBLE_CORES not set: $(cat "$T/out")"

# A core that does not exist.
rc=0; "$NKICTL" lock -c 5 -- true >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "lease of core 5: exit $rc"
grep -q "INVALID_ARGUMENT: cannot lease core 5: it does not exist" "$T/out" ||
	fail "lease of core 5: $(cat "$T/out")"

# The lease holds the core: a run waits for it; -w gives up.
"$NKICTL" lock -- sleep 2 &
lock_pid=$!
i=0; while [ "$(core_state 0)" != leased ]; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "core 0 never leased"; sleep 0.1
done
rc=0; "$NKICTL" lock -w 0.3 -- true >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "lock -w 0.3 on a held core: exit $rc"
grep -q "not granted within 0.3 s" "$T/out" || fail "lock -w: $(cat "$T/out")"
"$NKICTL" --json run "$T/va.nkir" -i x="$T/x.npy" -i y="$T/x.npy" -o "$T/o" >"$T/run.json" ||
	fail "run during the lease failed"
wait $lock_pid || fail "lock -- sleep 2 failed"
"$NKICTL" --json jobs --all >"$T/jobs.json" || fail "jobs --all failed"
"$PY" - "$T/jobs.json" <<'PYEOF' || fail "the run did not wait for the lease: $(cat "$T/jobs.json")"
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
lease = [j for j in jobs if j["kind"] == "lease" and j["kernel"] == "nkictl lock sleep"][0]
run = [j for j in jobs if j["kind"] == "run"][0]
assert lease["state"] == "done" and lease["status"] == "OK", lease
assert lease["finished_at"] - lease["started_at"] >= 1.9, lease
assert run["started_at"] >= lease["finished_at"], (run, lease)
assert run["queued_at"] < lease["finished_at"], (run, lease)
for k in ("id", "kind", "kernel", "pid", "uid", "core", "class", "state",
          "queued_at", "started_at", "finished_at", "status"):
    assert k in run, k
PYEOF

# The maximum: EXPIRED, CMD stopped, exit 1.
rc=0; "$NKICTL" lock -t 0.5 -- sleep 10 >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "expired lease: exit $rc"
grep -q "expired after 0.5 s" "$T/out" || fail "expired lease: $(cat "$T/out")"

# kill -9 of the holder: the core is free within 1 s (and CMD goes too).
"$NKICTL" lock -- sleep "30.$$" &	# a duration no other test runs
lock_pid=$!
i=0; while [ "$(core_state 0)" != leased ]; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "core 0 never leased"; sleep 0.1
done
kill -9 $lock_pid
t0=$(date +%s%N)
while [ "$(core_state 0)" != idle ]; do
	[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 1000 ] ||
		fail "core 0 still $(core_state 0) 1 s after kill -9 of the holder"
	sleep 0.05
done
wait $lock_pid 2>/dev/null || true
sleep 0.2
! pgrep -f "^sleep 30.$$\$" >/dev/null || fail "CMD outlived its nkictl lock"

stop_nkid || fail "nkid exited non-zero"
echo ok

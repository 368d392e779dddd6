#!/bin/sh
# Cancel: another user's job is PERMISSION_DENIED; the owner cancels a
# queued job (it never runs); root ends anyone's lease; a running job stops
# at the backend's next safe point; an unknown id is NOT_FOUND.
. "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
[ "$(id -u)" -eq 0 ] || skip "needs root to switch uid"
chmod 0755 "$T"

cat >"$T/spin.py" <<'PYEOF'
from nkid import nki
import nkid.nki.language as nl

@nki.jit
def spin(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:128, 0:512])
    for i in nl.sequential_range(60000):
        t = nl.add(t, t)
    nl.store(out[0:128, 0:512], value=t)
    return out
PYEOF
(cd "$T" && PYTHONPATH="$T" "$PY" -m nkid.trace spin:spin --shape 128,512 \
	--dtype float32 -o "$T/spin.nkir" >/dev/null 2>&1) || fail "cannot trace spin"
"$PY" -c "import numpy as np; np.save('$T/x.npy', np.zeros((128, 512), np.float32))"
chmod 0644 "$T/spin.nkir" "$T/x.npy"
echo '{ "socket_mode": "0666", "access": { "allow_uids": [65534] } }' >"$T/c.json"
start_nkid -c "$T/c.json"
"$NKICTL" compile "$T/spin.nkir" >/dev/null || fail "compile failed"

as_nobody() {
	setpriv --reuid 65534 --regid 65534 --clear-groups "$NKICTL" -s "$SOCK" "$@"
}
# job_id KIND UID: the id of the queued or running job of KIND by UID.
job_id() {
	"$NKICTL" --json jobs >"$T/j.json"
	json_get "$T/j.json" "[j['id'] for j in d['jobs'] if j['kind'] == '$1' and j['uid'] == $2][0]"
}
wait_jobs() {	# wait_jobs N: until N jobs are queued or running
	i=0; while :; do
		"$NKICTL" --json jobs >"$T/j.json"
		[ "$(json_get "$T/j.json" "len(d['jobs'])")" -ge "$1" ] && return 0
		i=$((i + 1)); [ $i -lt 100 ] || fail "never $1 jobs"; sleep 0.05
	done
}

"$NKICTL" lock -- sleep 20 >"$T/lock.out" 2>&1 &
lock_pid=$!
wait_jobs 1
lease=$(job_id lease 0)
as_nobody run "$T/spin.nkir" -i "$T/x.npy" >"$T/run.out" 2>&1 &
run_pid=$!
wait_jobs 2
run=$(job_id run 65534)

rc=0; as_nobody cancel "$lease" >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "uid 65534 cancelling root's lease: exit $rc"
grep -q "PERMISSION_DENIED: cannot cancel job $lease: it belongs to uid 0" "$T/out" ||
	fail "uid 65534 cancelling root's lease: $(cat "$T/out")"

as_nobody cancel "$run" >"$T/out" 2>&1 || fail "owner cannot cancel its job: $(cat "$T/out")"
rc=0; wait $run_pid || rc=$?
[ $rc -eq 1 ] || fail "cancelled run: exit $rc"
grep -q CANCELLED "$T/run.out" || fail "cancelled run: $(cat "$T/run.out")"

"$NKICTL" cancel "$lease" >/dev/null || fail "root cannot cancel a lease"
rc=0; wait $lock_pid || rc=$?
[ $rc -eq 1 ] || fail "lock whose lease was cancelled: exit $rc"
grep -q "cancelled" "$T/lock.out" || fail "lock: $(cat "$T/lock.out")"

rc=0; "$NKICTL" cancel 999999 >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q NOT_FOUND "$T/out" || fail "unknown id: $(cat "$T/out")"

# A running job stops at the next op boundary: well before it would end.
"$NKICTL" run "$T/spin.nkir" -i "$T/x.npy" >"$T/run2.out" 2>&1 &
run_pid=$!
i=0; while [ "$("$NKICTL" --json status >"$T/st.json"; json_get "$T/st.json" "d['cores'][0]['state']")" != busy ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "the run never started"; sleep 0.02
done
run=$(job_id run 0)
t0=$(date +%s%N)
"$NKICTL" cancel "$run" >"$T/out" || fail "cancel of a running job failed"
grep -q stopping "$T/out" || fail "cancel of a running job: $(cat "$T/out")"
rc=0; wait $run_pid || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -eq 1 ] && grep -q CANCELLED "$T/run2.out" || fail "stopped run: exit $rc: $(cat "$T/run2.out")"
grep -q "cancelled while running: job $run was cancelled (nkictl cancel)" "$T/run2.out" ||
	fail "a cancelled running job blames the client: $(cat "$T/run2.out")"
[ $ms -lt 500 ] || fail "the running job took $ms ms to stop"

"$NKICTL" --json jobs --all >"$T/all.json"
"$PY" - "$T/all.json" "$lease" <<'PYEOF' || fail "history: $(cat "$T/all.json")"
import json, sys
jobs = {j["id"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
nobody = [j for j in jobs.values() if j["uid"] == 65534][0]
assert nobody["state"] == "cancelled" and nobody["started_at"] is None, nobody
assert nobody["status"] == "CANCELLED", nobody
lease = jobs[int(sys.argv[2])]
assert lease["status"] == "CANCELLED" and lease["started_at"] is not None, lease
PYEOF

stop_nkid || fail "nkid exited non-zero"
echo ok

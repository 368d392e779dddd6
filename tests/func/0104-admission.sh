#!/bin/sh
# Admission and deadlines: a deadline shorter than the queue is
# DEADLINE_EXCEEDED and the job never runs; over jobs.max_queued or
# jobs.max_queued_per_client a job is RESOURCE_EXHAUSTED with the numbers;
# batch work waits behind interactive work.
. "$(dirname "$0")/lib.sh"

trace_va 128,512
ones_npy "$T/x.npy" 128,512
echo '{ "jobs": { "max_queued": 3, "max_queued_per_client": 3 } }' >"$T/c.json"
start_nkid -c "$T/c.json"
"$NKICTL" compile "$T/va.nkir" >/dev/null || fail "compile failed"
RUN="run $T/va.nkir -i x=$T/x.npy -i y=$T/x.npy"

queued() {
	"$NKICTL" --json status >"$T/st.json" && json_get "$T/st.json" "d['jobs']['queued']"
}
wait_queued() {
	n=0; while [ "$(queued)" -lt "$1" ]; do
		n=$((n + 1)); [ $n -lt 100 ] || fail "never $1 queued"; sleep 0.05
	done
}

"$NKICTL" lock -- sleep 2.5 &
lock_pid=$!
n=0; while [ "$("$NKICTL" --json status >"$T/st.json"; json_get "$T/st.json" "d['cores'][0]['state']")" != leased ]; do
	n=$((n + 1)); [ $n -lt 100 ] || fail "never leased"; sleep 0.05
done

# A deadline shorter than the queue.
rc=0; "$NKICTL" --timeout 0.5 $RUN -o "$T/od" >"$T/dl.out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q DEADLINE_EXCEEDED "$T/dl.out" || fail "deadline: exit $rc: $(cat "$T/dl.out")"

# batch first, then interactive: the interactive one runs first.
"$NKICTL" $RUN --batch -o "$T/ob" >"$T/b.out" 2>&1 &
b_pid=$!
wait_queued 1
"$NKICTL" $RUN -o "$T/oi" >"$T/i.out" 2>&1 &
i_pid=$!
wait_queued 2
# A third from one more client fills jobs.max_queued (3); a fourth is over.
"$NKICTL" $RUN -o "$T/o3" >/dev/null 2>&1 &
p3=$!
wait_queued 3
rc=0; "$NKICTL" $RUN -o "$T/o4" >"$T/full.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "a 4th queued job was taken: exit $rc"
grep -q "RESOURCE_EXHAUSTED: cannot run 'vector_add': 3 jobs are queued, the most nkid takes (jobs.max_queued)" "$T/full.out" ||
	fail "over jobs.max_queued: $(cat "$T/full.out")"

wait $lock_pid || fail "lock failed"
wait $b_pid || fail "batch run failed: $(cat "$T/b.out")"
wait $i_pid || fail "interactive run failed: $(cat "$T/i.out")"
wait $p3 || fail "third run failed"

# One process holding a lease, three calls at once: the third is over
# its limit of 3 (the lease and two runs).
"$PY" - "$SOCK" "$T/va.nkir" "$T/x.npy" <<'PYEOF' >"$T/client.out" 2>&1 || fail "per-client cap: $(cat "$T/client.out")"
import sys, concurrent.futures as cf
import numpy as np
import grpc
from nkid import client, trace
from nkid._proto import nkid_pb2 as pb
c = client.Client(sys.argv[1])
ref, _ = trace.load(sys.argv[2])
x = np.load(sys.argv[3])
req = pb.RunRequest(ref=ref, inputs=[client.to_wire("x", x), client.to_wire("y", x)], core=-1)
# Hold the core with a lease so the runs queue (a lease counts as one of
# the client's jobs: its limit is raised by one for it).
c2 = client.Client(sys.argv[1])
import queue, threading
q = queue.Queue()
def reqs():
    yield pb.LeaseRequest(core=0, holder="cap test")
    q.get()
lease = c2._stub.Lease(reqs())
first = next(lease)
while first.state != pb.LeaseReply.GRANTED:
    first = next(lease)
with cf.ThreadPoolExecutor(3) as ex:
    futs = [ex.submit(c._stub.Run, req, timeout=20) for _ in range(2)]
    import time
    time.sleep(0.5)
    try:
        c._stub.Run(req, timeout=5)
        raise SystemExit("third run was admitted")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
        assert "already has 3 jobs queued or running, its limit is 3 (jobs.max_queued_per_client)" in e.details(), e.details()
    q.put(None)
    for f in futs:
        f.result()
PYEOF

"$NKICTL" --json jobs --all >"$T/all.json"
"$PY" - "$T/all.json" <<'PYEOF' || fail "history: $(cat "$T/all.json")"
import json, sys
jobs = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["kind"] == "run"]
dl = jobs[0]
assert dl["state"] == "expired" and dl["status"] == "DEADLINE_EXCEEDED", dl
assert dl["started_at"] is None, dl
b, i = jobs[1], jobs[2]
assert b["class"] == "batch" and i["class"] == "interactive", (b, i)
assert i["started_at"] < b["started_at"], (b, i)
assert b["queued_at"] < i["queued_at"], (b, i)
PYEOF

"$NKICTL" --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['jobs']['rejected']")" -ge 2 ] || fail "rejected counter: $(cat "$T/st.json")"
stop_nkid || fail "nkid exited non-zero"
echo ok
